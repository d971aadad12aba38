"""docs/verify.png and docs/context_length.png: ``fastsoftmax verify
--context --out DIR`` at its default samples, the two figures copied here.

    python docs/make_context_figure.py
"""
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fastsoftmax import verify  # noqa: E402

FIGURES = ("verify.png", "context_length.png")


def main():
    with tempfile.TemporaryDirectory() as out:
        res = verify.run(context=True, progress=False, out=out)
        for name in FIGURES:
            shutil.copyfile(os.path.join(out, name), os.path.join(HERE, name))
    print(res.report())


if __name__ == "__main__":
    main()
