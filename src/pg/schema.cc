#include "pg/schema.h"

#include <string>

namespace mates::pg {

namespace {

// Held by whoever changes the schema (pg_advisory_xact_lock's key).
constexpr const char* kSchemaLockKey = "7283911";

// Step N brings the schema from version N-1 to N. Names are prefixed
// `mates_` so that the tables can share a database with others.
const char* const kSteps[] = {
    // 1: teams, inboxes and the task board.
    R"SQL(
CREATE TABLE mates_schema (version integer NOT NULL, migrated_at timestamptz NOT NULL DEFAULT now());
INSERT INTO mates_schema (version) VALUES (0);
CREATE TABLE mates_teams (
  name text PRIMARY KEY,
  created_at double precision NOT NULL
);
-- One row per undelivered message. A drain locks a member's rows in a
-- transaction and deletes them when its reader commits: a reader that dies
-- leaves them for the next drain.
CREATE TABLE mates_inbox (
  seq bigserial PRIMARY KEY,
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  member text NOT NULL,
  msg_id text NOT NULL,
  line text NOT NULL,
  UNIQUE (team, member, msg_id)
);
CREATE INDEX mates_inbox_member ON mates_inbox (team, member, seq);
CREATE TABLE mates_tasks (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  id bigint NOT NULL,
  subject text NOT NULL,
  description text NOT NULL DEFAULT '',
  active_form text NOT NULL DEFAULT '',
  status text NOT NULL,
  owner text NOT NULL DEFAULT '',
  blocked_by bigint[] NOT NULL DEFAULT '{}',
  blocks bigint[] NOT NULL DEFAULT '{}',
  metadata text NOT NULL DEFAULT '{}',
  created_at double precision NOT NULL,
  updated_at double precision NOT NULL,
  PRIMARY KEY (team, id)
);
-- Claims walk the pending tasks of one owner (theirs, then '') by id.
CREATE INDEX mates_tasks_open ON mates_tasks (team, owner, id) WHERE status = 'pending';
-- A claim in one round trip, its plans kept by the server: the first
-- pending task assigned to the claimer, else the first unowned one, whose
-- blockers are all completed or deleted. Rows another claimer holds are
-- skipped (SKIP LOCKED), and a row locked is checked again on its newest
-- version before it is taken: no task is claimed twice.
CREATE FUNCTION mates_claim_next(p_team text, p_owner text, p_now double precision)
RETURNS SETOF mates_tasks LANGUAGE plpgsql AS $$
DECLARE
  whose text;
  picked bigint;
BEGIN
  FOREACH whose IN ARRAY ARRAY[p_owner, ''] LOOP
    SELECT t.id INTO picked FROM mates_tasks t
     WHERE t.team = p_team AND t.status = 'pending' AND t.owner = whose
       AND NOT EXISTS (SELECT 1 FROM unnest(t.blocked_by) AS bid
                         JOIN mates_tasks b ON b.team = t.team AND b.id = bid
                        WHERE b.status NOT IN ('completed', 'deleted'))
     ORDER BY t.id LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY UPDATE mates_tasks SET owner = p_owner, status = 'in_progress', updated_at = p_now
                    WHERE team = p_team AND id = picked RETURNING *;
      RETURN;
    END IF;
  END LOOP;
END $$;
)SQL",
    // 2: the roster. A team's config is the document the file store keeps
    // in config.json (members, statuses, git and budget settings); NULL for
    // a team made at version 1, whose roster is its lead "lead" alone.
    R"SQL(
ALTER TABLE mates_teams ADD COLUMN config text;
)SQL",
    // 3: the message log (every message sent, in order, never drained: a
    // broadcast is one row) and the protocol requests a response is
    // matched to.
    R"SQL(
CREATE TABLE mates_messages (
  seq bigserial PRIMARY KEY,
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  msg_id text NOT NULL,
  line text NOT NULL,
  UNIQUE (team, msg_id)
);
CREATE INDEX mates_messages_team ON mates_messages (team, seq);
CREATE TABLE mates_requests (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  id text NOT NULL,
  doc text NOT NULL,
  created_at double precision NOT NULL,
  PRIMARY KEY (team, id)
);
)SQL",
    // 4: the agents' journals, a row per line as the journal file holds
    // it, so that a host on another machine can resume a member whose host
    // died (agent/journal.h).
    R"SQL(
CREATE TABLE mates_journals (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  member text NOT NULL,
  seq bigint NOT NULL,
  line text NOT NULL,
  PRIMARY KEY (team, member, seq)
);
)SQL",
    // 5: what each agent is doing now (agent/activity.h), the latest
    // document per member, for `mates status` on any machine.
    R"SQL(
CREATE TABLE mates_activity (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  member text NOT NULL,
  doc text NOT NULL,
  PRIMARY KEY (team, member)
);
)SQL",
    // 6: merge requests (store/merges.h), a document per request numbered
    // from 1 within its team, for a team whose teammates work in worktrees
    // on several machines (DESIGN §12, §13).
    R"SQL(
CREATE TABLE mates_merges (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  id bigint NOT NULL,
  doc text NOT NULL,
  PRIMARY KEY (team, id)
);
)SQL",
    // 7: claims that look their blockers up by key, and a claim that says
    // what it left for others.
    //
    // A task is unblocked when none of its blockers is still open (one
    // not there blocks nothing), each looked up by its key. Step 1's join
    // of the blockers was planned, on a table without statistics (a new
    // team's board), as a hash of the whole board for every pending task:
    // 2 ms for a claim that found nothing on 50 tasks, growing with their
    // square. (Written out where it is used: a SQL function holding a
    // subquery is not inlined, and its call per task cost as much again.)
    //
    // mates_claim_look: mates_claim_next, then the claimable unowned tasks
    // left (counted up to p_count_up_to: as many as the host has idle
    // teammates to wake) and, space-separated, the members other than the
    // claimer with a claimable task assigned (only names a member can
    // have, so that the spaces part them). A host's idle teammates then
    // wait in one line, and a board's NOTIFY wakes as many as it says it
    // made work for instead of all (store/claim_line.h). Each statement of
    // the function sees what was committed before it began, the claim too.
    // (A board of 1,000 tasks in levels of 30, a look that finds nothing:
    // step 1's claim 232 ms without statistics, this one 8.5 ms; with
    // them, 9.7 and 11.4 ms. What is left is the walk of the pending
    // tasks, each blocker looked up.)
    R"SQL(
CREATE OR REPLACE FUNCTION mates_claim_next(p_team text, p_owner text, p_now double precision)
RETURNS SETOF mates_tasks LANGUAGE plpgsql AS $$
DECLARE
  whose text;
  picked bigint;
BEGIN
  FOREACH whose IN ARRAY ARRAY[p_owner, ''] LOOP
    SELECT t.id INTO picked FROM mates_tasks t
     WHERE t.team = p_team AND t.status = 'pending' AND t.owner = whose
       AND NOT EXISTS (SELECT 1 FROM unnest(t.blocked_by) AS bid
                         WHERE (SELECT b.status FROM mates_tasks b WHERE b.team = t.team AND b.id = bid)
                               NOT IN ('completed', 'deleted'))
     ORDER BY t.id LIMIT 1 FOR UPDATE SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY UPDATE mates_tasks SET owner = p_owner, status = 'in_progress', updated_at = p_now
                    WHERE team = p_team AND id = picked RETURNING *;
      RETURN;
    END IF;
  END LOOP;
END $$;
CREATE FUNCTION mates_claim_look(p_team text, p_owner text, p_now double precision, p_count_up_to bigint,
                                 OUT claimed mates_tasks, OUT unowned_left bigint, OUT assigned_to text)
LANGUAGE plpgsql AS $$
BEGIN
  SELECT * INTO claimed FROM mates_claim_next(p_team, p_owner, p_now);
  -- A claim that found nothing found no claimable unowned task either
  -- (but those other claimers were taking: theirs to report).
  unowned_left := 0;
  IF claimed.id IS NOT NULL THEN
    SELECT count(*) INTO unowned_left FROM (
      SELECT 1 FROM mates_tasks t
       WHERE t.team = p_team AND t.status = 'pending' AND t.owner = ''
         AND NOT EXISTS (SELECT 1 FROM unnest(t.blocked_by) AS bid
                           WHERE (SELECT b.status FROM mates_tasks b WHERE b.team = t.team AND b.id = bid)
                                 NOT IN ('completed', 'deleted'))
       LIMIT p_count_up_to) n;
  END IF;
  SELECT coalesce(string_agg(a.owner, ' '), '') INTO assigned_to FROM (
    SELECT DISTINCT t.owner FROM mates_tasks t
     WHERE t.team = p_team AND t.status = 'pending' AND t.owner NOT IN ('', p_owner)
       AND t.owner ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$'  -- a member's name (a row set by hand may hold anything)
       AND NOT EXISTS (SELECT 1 FROM unnest(t.blocked_by) AS bid
                         WHERE (SELECT b.status FROM mates_tasks b WHERE b.team = t.team AND b.id = bid)
                               NOT IN ('completed', 'deleted'))) a;
END $$;
)SQL",
    // 8: each task's history of status and owner (the dashboard's task
    // detail), kept by a trigger, so that every way a row changes (the
    // claim functions above, an update from mates) records it; jsonb, so
    // that it holds nothing but JSON. The latest 50 changes.
    R"SQL(
ALTER TABLE mates_tasks ADD COLUMN history jsonb NOT NULL DEFAULT '[]';
CREATE FUNCTION mates_task_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  h jsonb := CASE WHEN jsonb_typeof(NEW.history) = 'array' THEN NEW.history ELSE '[]'::jsonb END;
  last jsonb := h -> -1;
BEGIN
  IF last IS NULL OR last ->> 'status' IS DISTINCT FROM NEW.status OR last ->> 'owner' IS DISTINCT FROM NEW.owner THEN
    h := h || jsonb_build_array(jsonb_build_object('at', NEW.updated_at, 'status', NEW.status, 'owner', NEW.owner));
    WHILE jsonb_array_length(h) > 50 LOOP
      h := h - 0;
    END LOOP;
    NEW.history := h;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER mates_task_history BEFORE INSERT OR UPDATE ON mates_tasks
  FOR EACH ROW EXECUTE FUNCTION mates_task_history();
)SQL",
    // 9: file leases (DESIGN §30): a task's paths or globs; a claim of an
    // unowned task passes over one whose lease overlaps a task in progress
    // while another is ready (store/task.h's LeasesOverlap, the same rule:
    // plain paths equal or a folder of the other; with a glob, the parts
    // before the first wildcard prefixes of each other).
    R"SQL(
ALTER TABLE mates_tasks ADD COLUMN paths jsonb NOT NULL DEFAULT '[]';
CREATE FUNCTION mates_leases_overlap(a jsonb, b jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM jsonb_array_elements_text(CASE WHEN jsonb_typeof(a) = 'array' THEN a ELSE '[]' END) x,
                  jsonb_array_elements_text(CASE WHEN jsonb_typeof(b) = 'array' THEN b ELSE '[]' END) y
     WHERE CASE WHEN x !~ '[*?[]' AND y !~ '[*?[]'
                THEN x = y OR starts_with(y, x || '/') OR starts_with(x, y || '/')
                ELSE starts_with(substring(x from '^[^*?[]*'), substring(y from '^[^*?[]*'))
                  OR starts_with(substring(y from '^[^*?[]*'), substring(x from '^[^*?[]*')) END)
$$;
CREATE OR REPLACE FUNCTION mates_claim_next(p_team text, p_owner text, p_now double precision)
RETURNS SETOF mates_tasks LANGUAGE plpgsql AS $$
DECLARE
  whose text;
  picked bigint;
BEGIN
  FOREACH whose IN ARRAY ARRAY[p_owner, ''] LOOP
    SELECT t.id INTO picked FROM mates_tasks t
     WHERE t.team = p_team AND t.status = 'pending' AND t.owner = whose
       AND NOT EXISTS (SELECT 1 FROM unnest(t.blocked_by) AS bid
                         WHERE (SELECT b.status FROM mates_tasks b WHERE b.team = t.team AND b.id = bid)
                               NOT IN ('completed', 'deleted'))
     ORDER BY (whose = '' AND t.paths <> '[]' AND EXISTS (
                 SELECT 1 FROM mates_tasks p
                  WHERE p.team = t.team AND p.status = 'in_progress' AND p.paths <> '[]'
                    AND mates_leases_overlap(p.paths, t.paths))), t.id
     LIMIT 1 FOR UPDATE OF t SKIP LOCKED;
    IF FOUND THEN
      RETURN QUERY UPDATE mates_tasks SET owner = p_owner, status = 'in_progress', updated_at = p_now
                    WHERE team = p_team AND id = picked RETURNING *;
      RETURN;
    END IF;
  END LOOP;
END $$;
)SQL",
    // 10: the conflicts a team's host forecasts (DESIGN §30), one document
    // per team, for `mates status` and the page on any machine.
    R"SQL(
CREATE TABLE mates_forecasts (
  team text PRIMARY KEY REFERENCES mates_teams (name) ON DELETE CASCADE,
  doc text NOT NULL
);
)SQL",
    // 11: who hosts each agent (DESIGN §32): a lease its host renews on a
    // session of its own (pid, backend_start); the token grows with each
    // new holder, and a write a host makes for the agent checks it.
    R"SQL(
CREATE TABLE mates_agent_leases (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  agent text NOT NULL,
  token bigint NOT NULL,
  holder text NOT NULL,
  pid integer NOT NULL,
  backend_start timestamptz,
  expires_at timestamptz NOT NULL,
  released boolean NOT NULL DEFAULT false,
  taken_from text NOT NULL DEFAULT '',
  taken_at double precision NOT NULL DEFAULT 0,
  PRIMARY KEY (team, agent)
);
)SQL",
    // 12: the fencing check (DESIGN §32) as one call that fails: it goes
    // with the write it guards, in that write's round trip and
    // transaction (Store::Fence), and the write does not run after it
    // fails. The lease's row is held FOR SHARE to the transaction's end.
    R"SQL(
CREATE FUNCTION mates_fence(p_team text, p_agent text, p_token bigint) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  l mates_agent_leases%ROWTYPE;
BEGIN
  SELECT * INTO l FROM mates_agent_leases WHERE team = p_team AND agent = p_agent FOR SHARE;
  IF FOUND AND l.token = p_token THEN
    RETURN;
  END IF;
  RAISE EXCEPTION USING ERRCODE = 'MF001', MESSAGE = format(
    'a write for %s of team %s with fencing token %s was refused as stale: %s', quote_literal(p_agent),
    quote_literal(p_team), p_token,
    CASE WHEN l.agent IS NOT NULL
         THEN regexp_replace(left(l.holder, 200), '[[:cntrl:]]', '?', 'g') || ' holds it with token ' || l.token
         ELSE 'nobody holds it' END);
END $$;
)SQL",
    // 13: what each team spent, by model (DESIGN §15, §32): the sums of the
    // usage lines of its journal copies, kept by triggers in the
    // transaction that writes the lines, so that every host checks a
    // team's budget against every machine's calls with one row read. A
    // line's counts are read as a host reads them (llm::UsageFromJson): a
    // count that is not a whole number is 0, one over 10^12 is 10^12, and
    // a line that is not JSON counts nothing (its write still stands).
    R"SQL(
CREATE TABLE mates_spend (
  team text NOT NULL REFERENCES mates_teams (name) ON DELETE CASCADE,
  model text NOT NULL,
  calls bigint NOT NULL,
  input bigint NOT NULL,
  output bigint NOT NULL,
  cache_write bigint NOT NULL,
  cache_read bigint NOT NULL,
  PRIMARY KEY (team, model)
);
CREATE FUNCTION mates_usage_count(u jsonb, k text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN jsonb_typeof(u -> k) = 'number' AND (u ->> k) ~ '^[0-9]+$'
              THEN least((u ->> k)::numeric, 1000000000000)::bigint ELSE 0 END
$$;
CREATE FUNCTION mates_usage_of(p_line text)
RETURNS TABLE (model text, input bigint, output bigint, cache_write bigint, cache_read bigint)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  j jsonb;
BEGIN
  IF p_line NOT LIKE '{"kind":"usage"%' THEN
    RETURN;
  END IF;
  BEGIN
    j := p_line::jsonb;
  EXCEPTION WHEN others THEN
    RETURN;
  END;
  RETURN QUERY SELECT left(coalesce(j ->> 'model', ''), 200), mates_usage_count(j -> 'usage', 'input_tokens'),
    mates_usage_count(j -> 'usage', 'output_tokens'), mates_usage_count(j -> 'usage', 'cache_creation_input_tokens'),
    mates_usage_count(j -> 'usage', 'cache_read_input_tokens');
END $$;
INSERT INTO mates_spend (team, model, calls, input, output, cache_write, cache_read)
SELECT j.team, u.model, count(*), sum(u.input), sum(u.output), sum(u.cache_write), sum(u.cache_read)
  FROM mates_journals j, mates_usage_of(j.line) u
 WHERE j.line LIKE '{"kind":"usage"%'
 GROUP BY j.team, u.model;
-- Rows are locked in (team, model) order: two writers of one team's
-- journals wait on each other, never in a cycle.
CREATE FUNCTION mates_spend_add() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO mates_spend AS s (team, model, calls, input, output, cache_write, cache_read)
  SELECT a.team, u.model, count(*), sum(u.input), sum(u.output), sum(u.cache_write), sum(u.cache_read)
    FROM added a, mates_usage_of(a.line) u
   WHERE a.line LIKE '{"kind":"usage"%'
   GROUP BY a.team, u.model ORDER BY 1, 2
  ON CONFLICT (team, model) DO UPDATE SET calls = s.calls + EXCLUDED.calls, input = s.input + EXCLUDED.input,
    output = s.output + EXCLUDED.output, cache_write = s.cache_write + EXCLUDED.cache_write,
    cache_read = s.cache_read + EXCLUDED.cache_read;
  RETURN NULL;
END $$;
-- A team deleted takes its rows with it: what its lines took off is
-- nobody's (no row is made).
CREATE FUNCTION mates_spend_remove() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  r record;
BEGIN
  FOR r IN SELECT g.team, u.model, count(*) AS calls, sum(u.input) AS input, sum(u.output) AS output,
                  sum(u.cache_write) AS cache_write, sum(u.cache_read) AS cache_read
             FROM gone g, mates_usage_of(g.line) u
            WHERE g.line LIKE '{"kind":"usage"%'
            GROUP BY g.team, u.model ORDER BY 1, 2 LOOP
    UPDATE mates_spend SET calls = calls - r.calls, input = input - r.input, output = output - r.output,
      cache_write = cache_write - r.cache_write, cache_read = cache_read - r.cache_read
     WHERE team = r.team AND model = r.model;
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER mates_spend_inserted AFTER INSERT ON mates_journals REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION mates_spend_add();
CREATE TRIGGER mates_spend_updated_from AFTER UPDATE ON mates_journals REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION mates_spend_remove();
CREATE TRIGGER mates_spend_updated_to AFTER UPDATE ON mates_journals REFERENCING NEW TABLE AS added
  FOR EACH STATEMENT EXECUTE FUNCTION mates_spend_add();
CREATE TRIGGER mates_spend_deleted AFTER DELETE ON mates_journals REFERENCING OLD TABLE AS gone
  FOR EACH STATEMENT EXECUTE FUNCTION mates_spend_remove();
)SQL",
};
static_assert(sizeof(kSteps) / sizeof(kSteps[0]) == kSchemaVersion, "one step per version");

Status Newer(const Connection& c, int found) {
  return Status::FailedPrecondition("the mates schema of " + c.target().shown + " is version " +
                                    std::to_string(found) + ", newer than this mates knows (" +
                                    std::to_string(kSchemaVersion) + "): use a newer mates");
}

// In one transaction under the schema lock: the version found, then the
// steps after it up to `up_to`, unless `init` finds an older schema (to
// migrate) or `!init` finds none (to init).
Result<int> Apply(Connection& c, bool init, int up_to = kSchemaVersion) {
  return InTransaction(c, [&]() -> Result<int> {
    MATES_RETURN_IF_ERROR(c.Exec(std::string("SELECT pg_advisory_xact_lock(") + kSchemaLockKey + ")").status());
    MATES_ASSIGN_OR_RETURN(int found, SchemaVersion(c));
    if (found > kSchemaVersion) return Newer(c, found);
    if (init && found > 0 && found < up_to) {
      return Status::FailedPrecondition("the mates schema of " + c.target().shown + " is version " +
                                        std::to_string(found) + ", older than this mates' " +
                                        std::to_string(kSchemaVersion) + ": run mates store migrate");
    }
    if (!init && found == 0) {
      return Status::FailedPrecondition(c.target().shown + " has no mates schema: run mates store init");
    }
    for (int v = found + 1; v <= up_to; ++v) {
      MATES_RETURN_IF_ERROR(c.ExecScript(kSteps[v - 1]));
      MATES_RETURN_IF_ERROR(
          c.Exec("UPDATE mates_schema SET version = $1, migrated_at = now()", {std::to_string(v)}).status());
    }
    return found;
  });
}

}  // namespace

Result<int> SchemaVersion(Connection& c) {
  MATES_ASSIGN_OR_RETURN(Rows has, c.Exec("SELECT to_regclass('mates_schema') IS NOT NULL"));
  if (has.size() != 1 || has.text(0, 0) != "t") return 0;
  MATES_ASSIGN_OR_RETURN(Rows v, c.Exec("SELECT max(version) FROM mates_schema"));
  if (v.size() != 1 || v.null(0, 0)) return Status::Corrupt("the mates_schema table of " + c.target().shown + " is empty");
  return static_cast<int>(v.integer(0, 0));
}

Result<int> InitSchema(Connection& c) { return Apply(c, /*init=*/true); }

Result<int> MigrateSchema(Connection& c) { return Apply(c, /*init=*/false); }

Result<int> ApplySchemaUpTo(Connection& c, int version) {
  if (version < 1 || version > kSchemaVersion) return Status::InvalidArgument("no schema version " + std::to_string(version));
  return Apply(c, /*init=*/true, version);
}

Status CheckSchema(Connection& c) {
  MATES_ASSIGN_OR_RETURN(int found, SchemaVersion(c));
  if (found == 0) return Status::FailedPrecondition(c.target().shown + " has no mates schema: run mates store init");
  if (found > kSchemaVersion) return Newer(c, found);
  if (found < kSchemaVersion) {
    return Status::FailedPrecondition("the mates schema of " + c.target().shown + " is version " +
                                      std::to_string(found) + ": run mates store migrate");
  }
  return Status::Ok();
}

}  // namespace mates::pg
