r"""The frozen-law base: scipy.stats' verbs, written and documented once.

Every distribution of :mod:`fastsoftmax.theory` (an observable's law
:class:`~fastsoftmax.theory.Observable`, the gap's :class:`~fastsoftmax.theory.Gap`,
the random energy model's :class:`~fastsoftmax.theory.RemObservable`) is a
:class:`Frozen` law, like a frozen :mod:`scipy.stats` distribution: its
parameters are fixed and it broadcasts over its argument and them.  A law
supplies only what it alone knows, as private hooks (scipy's ``rv_continuous``
habit): ``_logcdf(x)`` and ``_logsf(x)`` (each checks its argument), ``_ppf(q)``
and, where its upper tail is solved more accurately than ``ppf(1 - q)``,
``_isf(q)``; ``_mean()`` where the mean is exact.  The public verbs follow:

* ``logcdf(x)`` = log P(X <= x), ``logsf(x)`` = log P(X > x): the hooks;
* ``cdf(x)`` = exp(logcdf(x)), ``sf(x)`` = exp(logsf(x)): each tail from its
  own log, so either keeps its relative accuracy until it underflows;
* ``ppf(q)``: the x with cdf(x) = q; ``isf(q)``: the x with sf(x) = q
  (``ppf(1 - q)`` unless the law solves its upper tail itself);
  ``median()`` = ``ppf(1/2)``; q is checked to lie in [0, 1] first;
* ``mean()``: where the law gives it exactly, else ``NotImplementedError``.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._checks import _check_prob

__all__ = ["Frozen"]


class Frozen:
    r"""A frozen law with scipy.stats' verbs, from the few its subclass knows.

    Subclasses supply ``_logcdf``, ``_logsf`` and ``_ppf`` (and ``_isf``,
    ``_mean`` where they know better than the defaults): see the module
    docstring.  Everything broadcasts over the argument and the law's
    parameters.

    Examples
    --------
    >>> from fastsoftmax import theory
    >>> gap = theory.Law.gaussian(64, 1.0).gap
    >>> isinstance(gap, theory._frozen.Frozen)
    True
    >>> print(f"{float(gap.median()):.4f} {float(gap.sf(1.0)):.4f}")
    0.2821 0.0639
    """

    # what a law supplies ------------------------------------------------------

    def _logcdf(self, x: ArrayLike) -> np.ndarray:
        raise NotImplementedError

    def _logsf(self, x: ArrayLike) -> np.ndarray:
        raise NotImplementedError

    def _ppf(self, q: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _isf(self, q: np.ndarray) -> np.ndarray:
        return self._ppf(1.0 - q)

    def _mean(self) -> np.ndarray:
        raise NotImplementedError(f"the mean of {self!r} is not computed here: use median() "
                                  f"or ppf(q)")

    # scipy.stats' verbs -------------------------------------------------------

    def logcdf(self, x: ArrayLike) -> np.ndarray:
        """Log of P(X <= x), finite where ``cdf`` underflows.

        Parameters
        ----------
        x : array_like of float
            The value: a gap in logit units, an observable's threshold t
            (in (0, 1], beyond 1 where the observable exceeds 1), or the
            level of the largest probability.

        Returns
        -------
        ndarray
            Broadcast over x and the law's parameters.  A law exact in the
            gap (the gap itself, an observable at n <= 2 or at order 0)
            integrates its lower tail, never taking it as 1 - sf.

        Raises
        ------
        ValueError
            For x out of the law's range.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap.logcdf(1e-9)):.4f}")
        -21.2956
        >>> law = theory.Law.dot_product(64, 16, scaled=True)
        >>> print(f"{float(law['jac_diag_max'].logcdf(1e-6)):.1f}")
        -63.5
        """
        return self._logcdf(x)

    def logsf(self, x: ArrayLike) -> np.ndarray:
        """Log of P(X > x), finite where ``sf`` underflows.

        Parameters
        ----------
        x : array_like of float
            The value (as :meth:`logcdf`).

        Returns
        -------
        ndarray
            Broadcast over x and the law's parameters.  Near 0 (sf near 1)
            it has sf's absolute accuracy, about 1e-15: ``logcdf`` is the
            accurate tail there.  An observable's order-1 law takes it as
            log(1 - cdf).

        Raises
        ------
        ValueError
            For x out of the law's range.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap.logsf(60.0)):.2f}")
        -903.97
        """
        return self._logsf(x)

    def cdf(self, x: ArrayLike) -> np.ndarray:
        """P(X <= x), the distribution function (``exp(logcdf(x))``).

        For an observable's law it is the fraction of rows whose observable
        is below x, what ``Summary[obs].fraction_below(x)`` measures (the
        laws are continuous for n >= 2 and a logit scale > 0).

        Parameters
        ----------
        x : array_like of float
            The value (as :meth:`logcdf`).

        Returns
        -------
        ndarray
            Broadcast over x and the law's parameters, with the lower tail's
            relative accuracy; NaN where the law has no value there.

        Raises
        ------
        ValueError
            For x out of the law's range.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap.cdf(1e-9)):.6e}")
        5.641896e-10
        >>> law = theory.Law.dot_product(64, 4096, scaled=False)
        >>> print(f"{float(law['jac_diag_max'].cdf(1e-6)):.4f}")
        0.5905
        """
        return np.exp(self._logcdf(x))

    def sf(self, x: ArrayLike) -> np.ndarray:
        """P(X > x), the survival function (``exp(logsf(x))``).

        Parameters
        ----------
        x : array_like of float
            The value (as :meth:`logcdf`).

        Returns
        -------
        ndarray
            Broadcast over x and the law's parameters: 1 - cdf(x), from its
            own tail where the law is exact; NaN where the law has no value.

        Raises
        ------
        ValueError
            For x out of the law's range.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap.sf(20.0)):.6e}")
        2.088488e-45
        >>> print(f"{float(theory.Law.gaussian(64, 49.0)['jac_diag_max'].sf(1e-6)):.4f}")
        0.5017
        """
        return np.exp(self._logsf(x))

    def ppf(self, q: ArrayLike) -> np.ndarray:
        """The q-quantile: the x with cdf(x) = q.

        Parameters
        ----------
        q : array_like of float in [0, 1]
            The probability level.

        Returns
        -------
        ndarray
            Broadcast over q and the law's parameters; NaN where the law
            does not reach q.

        Raises
        ------
        ValueError
            If q is outside [0, 1].

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.gaussian(1024).gap.ppf([0.1, 0.5, 0.9]).round(4))
        [0.0323 0.2076 0.6512]
        >>> print(f"{float(theory.Law.gaussian(64, 49.0)['jac_diag_max'].ppf(0.5)):.3e}")
        1.067e-06
        """
        return self._ppf(_check_prob("q", q))

    def isf(self, q: ArrayLike) -> np.ndarray:
        """The inverse survival function: the x with sf(x) = q.

        Parameters
        ----------
        q : array_like of float in [0, 1]
            The probability of a larger value.

        Returns
        -------
        ndarray
            Solved on the upper tail where the law has one of its own (small
            q keep their relative accuracy, which ``ppf(1 - q)`` would round
            away); otherwise ``ppf(1 - q)``.

        Raises
        ------
        ValueError
            If q is outside [0, 1].

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0).gap.isf(2.088488e-45)):.4f}")
        20.0000
        >>> print(f"{float(theory.Law.gaussian(2, 3.0)['jac_diag_max'].isf(0.5)):.6f}")
        0.051159
        """
        return self._isf(_check_prob("q", q))

    def median(self) -> np.ndarray:
        """The median (``ppf(0.5)``).

        Returns
        -------
        ndarray
            Broadcast over the law's parameters.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(theory.Law.gaussian([2, 64, 16384]).gap.median().round(4))
        [0.9539 0.2821 0.1712]
        >>> print(f"{float(theory.Law.gaussian(2, 3.0)['jac_diag_max'].median()):.6f}")
        0.051159
        """
        return self._ppf(np.float64(0.5))

    def mean(self) -> np.ndarray:
        """The mean, where the law gives it exactly.

        Returns
        -------
        ndarray
            Broadcast over the law's parameters.

        Raises
        ------
        NotImplementedError
            Where the law does not compute its mean (the gap's laws are its
            distribution function and quantiles).
        ValueError
            Where the law computes it only in part of its parameters.

        Examples
        --------
        >>> from fastsoftmax import theory
        >>> print(f"{float(theory.Law.gaussian(2, 1.0)['entropy'].mean()):.6f}")
        0.539500
        >>> print(theory.Law.dot_product(1024, 64, True).rem["entropy"].mean().round(3))
        6.433
        >>> theory.Law.gaussian(64).gap.mean()
        Traceback (most recent call last):
        ...
        NotImplementedError: the mean of Law.gaussian(n=64.0, scale=1.0).gap is not computed here: use median() or ppf(q)
        """
        return self._mean()
