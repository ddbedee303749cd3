import threading
from typing import Any

from mgr_module import CLIReadCommand, HandleCommandResult, MgrModule


class Module(MgrModule):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._shutdown = threading.Event()

    @CLIReadCommand('tiertune status')
    def _status(self, format: str = 'plain') -> HandleCommandResult:
        """placeholder"""
        return HandleCommandResult(0, 'ok', '')

    def serve(self) -> None:
        self._shutdown.wait()

    def shutdown(self) -> None:
        self._shutdown.set()
