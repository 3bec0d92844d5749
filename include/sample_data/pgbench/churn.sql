-- churn.sql: a custom pgbench script (pgbench -f) run next to the default TPC-B-like workload
-- to put deletes, re-inserts, primary-key changes and keyless deletes into the change stream.
-- One client only (-c 1): the NOT EXISTS guard of step 4 is not safe against a second one.
\set del_aid random(1, 200)
\set ins_aid random(1, 200)
\set swap_aid random(201, 100000 * :scale)
\set new_aid random(100000 * :scale + 1, 110000 * :scale)
\set mv_from random(201, 100000 * :scale)
\set mv_to random(110000 * :scale + 1, 120000 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
BEGIN;
-- 1. delete an account of the hot range 1..200 (it may be gone already: then nothing happens)
DELETE FROM pgbench_accounts WHERE aid = :del_aid;
-- 2. re-insert an account of the hot range when it is missing
INSERT INTO pgbench_accounts (aid, bid, abalance, filler)
  VALUES (:ins_aid, 1, :delta, 'reinserted') ON CONFLICT (aid) DO NOTHING;
-- 3. open a new account above the initial range, or top up one opened before (upsert)
INSERT INTO pgbench_accounts (aid, bid, abalance, filler)
  VALUES (:new_aid, 1, :delta, 'opened')
  ON CONFLICT (aid) DO UPDATE SET abalance = pgbench_accounts.abalance + EXCLUDED.abalance,
                                  filler = 'topped up';
-- 4. change the primary key of an account (wal2json: U with the old key in "identity")
UPDATE pgbench_accounts SET aid = :mv_to, filler = 'renumbered'
  WHERE aid = :mv_from AND NOT EXISTS (SELECT 1 FROM pgbench_accounts WHERE aid = :mv_to);
-- 5. delete and re-insert the same key inside one transaction (D then I of one key)
DELETE FROM pgbench_accounts WHERE aid = :swap_aid;
INSERT INTO pgbench_accounts (aid, bid, abalance, filler) VALUES (:swap_aid, 1, :delta, 'replaced');
-- 6. a teller update that also changes a char(84) column
UPDATE pgbench_tellers SET tbalance = tbalance + :delta, filler = 'churned' WHERE tid = :tid;
-- 7. keyless table: delete a few history rows (needs REPLICA IDENTITY FULL for the old rows)
DELETE FROM pgbench_history WHERE tid = :tid AND delta BETWEEN :delta - 25 AND :delta + 25;
END;
