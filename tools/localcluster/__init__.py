"""A local Ceph cluster with a writeback cache tier over a slow base tier.

The project's own vstart: tests, the demo and benchmarks start one with
`LocalCluster(dir, ClusterSpec(...)).start()` or `python3 -m localcluster start`.
The tiertune mgr module never imports this package.
"""

from .cluster import ClusterError, LocalCluster
from .spec import ClusterSpec, GiB, MiB

__all__ = ['ClusterError', 'ClusterSpec', 'GiB', 'LocalCluster', 'MiB']
