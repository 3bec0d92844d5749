"""Quality checks: source reconciliation (and, later, expectation suites and ACID invariants)."""
