"""Quality checks: source reconciliation (reconcile), Great Expectations suites as a gate before
commit and after commit (gx, validate), and ACID invariants of the files (invariants)."""
