r"""The accumulator, built from parts, and its merges.

An accumulator summarises the per-row observables of any number of rows in
memory independent of that number.  As boost-histogram builds a storage from
small accumulators, it is the composition of four parts, each a small value
type with its own merge (``a + b`` new, ``a += b`` in place; compatibility
checked, an empty side leaving the other's numbers, the argument never
changed) and its own dict form:

* :class:`Moments` (``_moments``): for each of the 2 * NOBS channels (the
  value of each observable, then its log10), the count, mean and sum of
  squared deviations of the finite values, combined over a run's fixed
  blocks by a fixed tree (:class:`MomentTree`: the bits of one pass, however
  the run was split) and across runs by Chan's formula;
* :class:`Extremes` (``_extremes``): the min and max of each channel
  (infinities included) and its number of infinite values;
* :class:`ThresholdCounts` (``_thresholds``): for each observable, exact
  counts of values below each threshold;
* :class:`Sketch` (``_sketch``): for each observable, a log-bucket sketch
  without a floor, a bucket mapping (``fastsoftmax._kernels.sketch.BucketMapping``)
  and a store of counts (``fastsoftmax._kernels.sketch.WindowStore``): quantiles
  within 1% in value and 0.005 (0.1% beyond |log10| = 1000) in log10, at any
  depth; its size follows the data.

:class:`Accumulator` (``_accumulator``) holds the rows counted and the four
parts; the backends' kernels fill the parts' arrays through
:func:`block_reduce` (``_block``); ``_serial`` is the wire format (strict
JSON, the key order, the strict readers every part's ``from_dict`` uses).
"""
from ._accumulator import Accumulator
from ._block import block_reduce
from ._extremes import Extremes
from ._moments import (NCH, TREE_DEPTH, MomentTree, Moments, chan_merge, tree_push_blocks,
                       tree_push_nodes, tree_total)
from ._serial import KEYS
from ._sketch import Sketch
from ._thresholds import ThresholdCounts

__all__ = ["Accumulator", "Moments", "Extremes", "ThresholdCounts", "Sketch", "MomentTree",
           "block_reduce", "chan_merge", "tree_push_blocks", "tree_push_nodes", "tree_total",
           "NCH", "TREE_DEPTH", "KEYS"]
