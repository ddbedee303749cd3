"""Pin numpy's CPU dispatch for the simulator benchmarks, so their figures
reproduce from one machine to the next.

numpy 1.24 (Debian bookworm's python3-numpy) runs its float64 exp and log
through AVX-512 code on a CPU that has it, and through AVX2 code
otherwise; the two differ in the last bits (numpy issue 23523).  The
simulator and the module's own fit amplify those bits: on an AVX-512 host
(session 38, 2026-12-05) scan-pollutes-hot-set gave tiertune a hit ratio
of 0.93274 and static:0.1,0.4,0.9 0.93521, against 0.93192 and 0.93447
with AVX-512 disabled, which are the committed figures of
bench-results/sim/results.md, bit for bit.  So every simulator entry
point calls pin() before it imports numpy: without AVX-512, as the
committed runs were.  NPY_DISABLE_CPU_FEATURES already set is left as it
is (an empty value runs natively)."""

import os
import sys
from pathlib import Path

# numpy 1.24's AVX-512 dispatch targets on x86_64; a name another numpy
# build does not dispatch only draws an ImportWarning.
AVX512_TARGETS = 'AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL'
ENV = 'NPY_DISABLE_CPU_FEATURES'


def has_avx512(cpuinfo: Path = Path('/proc/cpuinfo')) -> bool:
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    return any(line.startswith('flags') and 'avx512f' in line.split()
               for line in text.splitlines())


def pin() -> None:
    """Before numpy's first import: disable its AVX-512 paths on a CPU that
    has them.  After it, too late: say so rather than run unpinned quietly."""
    if ENV in os.environ or not has_avx512():
        return
    if 'numpy' in sys.modules:
        print(f'fp_pin: numpy was imported before pin(); its AVX-512 paths stay on '
              f'and the figures may differ from the committed ones in the last '
              f'digits (set {ENV}="{AVX512_TARGETS}")', file=sys.stderr)
        return
    os.environ[ENV] = AVX512_TARGETS
