# tap_check.py: the TAP line the Python checks of tests/sh print for each
# check (imported by openai_check.py and langchain_check.py; lib.bash's
# tap counts the lines).


def check(desc, cond, info=""):
    """Print "ok - DESC" or "not ok - DESC" (then INFO as comment lines); return cond."""
    print(("ok - " if cond else "not ok - ") + desc, flush=True)
    if not cond and info:
        print("#   " + str(info).replace("\n", "\n#   "), flush=True)
    return cond
