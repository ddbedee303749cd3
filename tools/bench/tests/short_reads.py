"""A short read scenario for the tests of the bench tools: 40 s of zipf
reads on a small cache, short enough for best-static's grid."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import scenario as scn

SHORT_READS = scn.from_dict({
    'name': 'short-reads',
    'description': 'zipf reads on a small cache, for the bench tools\' tests',
    'cache': {'target_max_bytes': '256MiB', 'pg_num': 8},
    'object_size': '4MiB',
    'phases': [{'name': 'hot', 'duration_s': 40, 'op': 'read', 'threads': 4,
                'block_size': '64KiB', 'keys': {'dist': 'zipf', 'theta': 0.99, 'count': 80}}],
})
