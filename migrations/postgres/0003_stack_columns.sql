-- A repository of many root modules: each change set records the stack (root module), the
-- Terraform workspace and the version of the state it was decided against (an S3 ETag, an HCP
-- state version, a serial and lineage). NULL for a repository read as one root module with its
-- state file. Same change as migrations/sqlite/0004.
ALTER TABLE change_sets ADD COLUMN stack text;
ALTER TABLE change_sets ADD COLUMN workspace text;
ALTER TABLE change_sets ADD COLUMN state_version text;
CREATE INDEX change_sets_stack ON change_sets (stack, workspace);
