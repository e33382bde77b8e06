"""The tally the command-line test scripts share: check() prints one ok/FAIL line per check,
summary() the totals and the exit status."""
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def summary():
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0
