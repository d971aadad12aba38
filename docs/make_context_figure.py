"""docs/context_length.png (and docs/verify.png): ``fastsoftmax verify
--context`` at its default samples, about a minute on two cores.

    python docs/make_context_figure.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fastsoftmax import plot, verify  # noqa: E402


def main():
    res = verify.run(context=True, progress=False)
    plot.context_plot(res, os.path.join(HERE, "context_length.png"))
    print(res.report())


if __name__ == "__main__":
    main()
