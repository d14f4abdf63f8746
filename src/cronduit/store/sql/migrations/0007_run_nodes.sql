-- The node a run goes on (settings.node): the name that started it, kept after it ended, so a
-- run's record says where its log and output files are. With SQLite there is one node.
ALTER TABLE runs ADD COLUMN node TEXT;
