import type { PgPool } from '../client-types.js';
import { postgresSchemaSql } from './rate-limit.sql.js';

/**
 * Creates the schema, tables and functions (CREATE ... IF NOT EXISTS / OR REPLACE): safe to run at every
 * start, from many processes at once, and beside instances of the version before (CONTRIBUTING.md, "Changing
 * the PostgreSQL schema", says how a release keeps it so). It runs in one transaction, on one connection of the pool, under a transaction-level advisory lock of the schema's
 * name, so concurrent migrations of a schema wait for each other instead of racing (CREATE SCHEMA IF NOT EXISTS,
 * CREATE OR REPLACE FUNCTION and ALTER TABLE are not safe against themselves); on error it rolls back and
 * rethrows.
 */
export async function migrateSchema(pool: PgPool, schema: string): Promise<void> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    // A statement of its own: the schema SQL then runs on a snapshot taken after the lock was granted.
    await client.query("SELECT pg_advisory_xact_lock(hashtextextended('nestjs-rate-limit:migrate:' || $1, 0))", [
      schema,
    ]);
    await client.query(postgresSchemaSql(schema));
    await client.query('COMMIT');
  } catch (error) {
    // A connection that cannot even roll back is released with its error: the pool discards it.
    await client.query('ROLLBACK').catch((rollbackError: Error) => (broken = rollbackError));
    throw error;
  } finally {
    client.release(broken);
  }
}
