// A Node service (a Next.js route handler, a TypeScript worker) on the same database hands work to
// crontick: `select crontick.enqueue(...)` inside the service's own transaction, with node-postgres.
// The job commits with the service's own row, or neither does; the next tick runs it.
//
//   cd examples/node && npm ci
//   DATABASE_URL=postgres://app@127.0.0.1:5432/app node enqueue.mjs
//
// It signs up one user (committed: the row and its welcome-email job) and tries a second whose
// transaction fails after the enqueue (rolled back: no row, no job), then prints one JSON line:
//   {"committed":{"email":"...","job_id":"17"},"rolled_back":{"email":"...","job_id":"18","error":"..."}}
// The rolled-back job id was handed out inside the aborted transaction and never exists.
// A Python module named in CRONTICK_HANDLERS handles the job type (signup.welcome_email here).
//
// `crontick` in the SQL is crontick's schema (CRONTICK_SCHEMA, default crontick). Every name is
// schema-qualified, so this works through a transaction pooler (Supavisor, Neon, PgBouncer), which
// carries no search_path between transactions.
import { pathToFileURL } from "node:url";

import pg from "pg";

const JOB_TYPE = "signup.welcome_email";

/** What the demo's second signup fails with, after its row and its job were written. */
class PaymentDeclined extends Error {}

/** Add a crontick job inside the caller's transaction; returns the job's id (a string: pg returns bigint so).
 * With `key`, a job still pending or running with that key wins: nothing is added and its id is returned. */
export async function enqueue(client, type, payload, { runAfter = null, maxAttempts = null, key = null } = {}) {
  const { rows } = await client.query(
    `select crontick.enqueue($1, $2::jsonb, run_after => $3::timestamptz,
                             max_attempts => $4::integer, key => $5) as id`,
    [type, JSON.stringify(payload), runAfter, maxAttempts, key],
  );
  return rows[0].id;
}

/** Run `work` in one transaction on `client`: COMMIT when it returns, ROLLBACK when it throws. */
export async function transaction(client, work) {
  await client.query("begin");
  try {
    const result = await work(client);
    await client.query("commit");
    return result;
  } catch (error) {
    await client.query("rollback");
    throw error;
  }
}

/** The app's own write and its job, together: the pattern a signup route follows. */
async function signUp(client, email, { declineCard = false } = {}) {
  let jobId = null;
  try {
    await transaction(client, async (tx) => {
      const { rows } = await tx.query("insert into public.signups (email) values ($1) returning id", [email]);
      jobId = await enqueue(tx, JOB_TYPE, { email, signup_id: rows[0].id }, { key: `welcome:${email}` });
      if (declineCard) {
        throw new PaymentDeclined("expected a card that can be charged, got: declined");
      }
    });
    return { committed: true, job_id: jobId };
  } catch (error) {
    if (!(error instanceof PaymentDeclined)) throw error;
    return { committed: false, job_id: jobId, error: error.message };
  }
}

async function main() {
  const url = process.env.DATABASE_URL;
  if (!url) {
    console.error("enqueue.mjs: expected DATABASE_URL (postgres://user:pass@host:5432/db), got: nothing");
    process.exit(2);
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    // The app's own table (a real app has its own; this demo makes one), in public, outside crontick's schema.
    await client.query(
      "create table if not exists public.signups (id serial primary key, email text not null unique)",
    );
    const stamp = Date.now().toString(36);
    const ada = `ada-${stamp}@example.com`;
    const bob = `bob-${stamp}@example.com`;
    const committed = await signUp(client, ada);
    const rolledBack = await signUp(client, bob, { declineCard: true });
    if (!committed.committed || rolledBack.committed) {
      throw new Error(`expected one commit and one rollback, got: ${JSON.stringify({ committed, rolledBack })}`);
    }
    console.log(
      JSON.stringify({
        committed: { email: ada, job_id: committed.job_id },
        rolled_back: { email: bob, job_id: rolledBack.job_id, error: rolledBack.error },
      }),
    );
  } finally {
    await client.end();
  }
}

// Run as a script; imported (into a Next.js route, say), it only defines enqueue() and transaction().
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error) => {
    console.error(`enqueue.mjs: ${error.message}`);
    process.exit(1);
  });
}
