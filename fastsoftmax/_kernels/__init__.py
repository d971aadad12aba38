"""The compiled kernels' source: one source for every target.

Every function here is numerical and compiled (``numba.njit`` on the CPU,
``numba.cuda.jit(device=True)`` on a GPU, from the same Python source);
nothing here validates arguments or imports the layers above.

* ``row``: the per-row softmax math in the log domain (top two, the four
  sums, the observables' logs), the softmax and log-softmax rows;
* ``rng``: the counter-based Philox4x32-10 streams, normals, uniforms, chi-square;
* ``gen``: the models' logit generators (rows drawn from ``rng``);
* ``vmath``: vectorizable exp, log, sincos, max/min;
* ``simd``: the 16 explicit lanes, their fixed summation tree, prefetch;
* ``sketch``: the log-bucket sketch's geometry (mapping and store);
* ``features``: the CPU's vector units and the kernels' vector width.
"""
