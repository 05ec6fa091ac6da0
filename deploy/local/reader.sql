-- A login for people who query the knowledge base: read-only through driftback_reader (the role and
-- its grants come from the daemon's first migration; creating it first here is harmless).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'driftback_reader') THEN
        CREATE ROLE driftback_reader NOLOGIN;
    END IF;
END
$$;
CREATE ROLE reader LOGIN PASSWORD 'reader' IN ROLE driftback_reader;
