/**
 * Reading what the database broadcast (`realtime.messages`, the platform
 * shim's stand-in for Supabase Realtime) in tests.
 *
 * @module
 */
import type pg from "pg";

/** A broadcast as `realtime.broadcast_changes` stores it. */
export interface BroadcastMessage {
  topic: string;
  event: string;
  private: boolean;
  payload: {
    operation: string;
    table: string;
    schema: string;
    record: Record<string, unknown> | null;
    old_record: Record<string, unknown> | null;
  };
}

/** The broadcasts on user `userId`'s private topic `user:<id>`, oldest first. */
export async function messagesFor(pool: pg.Pool, userId: string): Promise<BroadcastMessage[]> {
  const { rows } = await pool.query<BroadcastMessage>(
    "select topic, event, private, payload from realtime.messages where topic = $1 order by id",
    [`user:${userId}`],
  );
  return rows;
}
