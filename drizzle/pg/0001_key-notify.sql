-- Every change to a key or tenant, whoever makes it (a node's admin API, the
-- CLI, psql), tells the nodes listening on `tollgate_keys` to pull changes at
-- once; they also poll, so a lost notification only delays (src/keys/pg-sync.ts).
CREATE FUNCTION tollgate_notify_keys() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tollgate_keys', TG_TABLE_NAME);
  RETURN NULL;
END;
$$;
--> statement-breakpoint
CREATE TRIGGER api_keys_notify AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys();
--> statement-breakpoint
CREATE TRIGGER tenants_notify AFTER INSERT OR UPDATE OR DELETE ON tenants FOR EACH STATEMENT EXECUTE FUNCTION tollgate_notify_keys();
