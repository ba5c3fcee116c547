-- A connection's whole rate budget in its row (issue 29): the requests in flight (leases, by id) and the processes
-- waiting (waiters, by name) move into api_budgets, and a write names the version it read. A reservation or a
-- release is then one read and one conditional UPDATE, where it was a row-locked transaction of six and four
-- statements on three tables (about 14 round trips for every API request). In-flight leases of processes running
-- during the upgrade are dropped with their table: the service's next answer corrects the count.
ALTER TABLE api_budgets
  ADD COLUMN leases jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN waiters jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN lease_seq bigint NOT NULL DEFAULT 0,
  ADD COLUMN version bigint NOT NULL DEFAULT 0;
UPDATE api_budgets SET in_flight = 0;
DROP TABLE api_budget_leases;
DROP TABLE api_budget_waiters;
-- Unlogged: its writes (two per API request) carry no WAL, so their commits wait for no flush. After a crash of
-- PostgreSQL the table comes back empty: each connection's row is made again with an unknown window (reset_known
-- false), where requests go one at a time until an answer names the window (src/api/budget.ts), so nothing is sent
-- that the service would refuse; the counters (requests_total, accounting_errors) start again from 0.
ALTER TABLE api_budgets SET UNLOGGED;
