"""The held-out documents of the QA bench (bench/qa/heldout.txt): which
documents the tables and plots keep apart from the tuning half."""
import os

DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "qa", "heldout.txt")


def load_heldout(path=DEFAULT):
    with open(path, encoding="utf-8") as f:
        return {l.strip() for l in f if l.strip() and not l.startswith("#")}


def take_heldout_arg(args):
    """The path given by --heldout FILE (taken out of args), else the default."""
    if "--heldout" not in args:
        return DEFAULT
    i = args.index("--heldout")
    path = args[i + 1]
    del args[i:i + 2]
    return path
