import assert from "node:assert/strict";
import { SendMessageArgs } from "../../shared/conversation_schemas.ts";
import { isUnread, timestampMicros } from "../../shared/conversations.ts";
import { RequestListingAccessArgs } from "../../shared/listing_access_schemas.ts";

const BUYER = "00000000-0000-4000-8000-000000000001";
const SELLER = "00000000-0000-4000-8000-000000000002";
const CONVERSATION = "00000000-0000-4000-8000-000000000003";

Deno.test("timestampMicros() keeps PostgREST's microseconds, whatever digits it writes", () => {
  assert.equal(
    timestampMicros("2026-11-28T05:38:19.031174+00:00") -
      timestampMicros("2026-11-28T05:38:19.031+00:00"),
    174,
  );
  assert.equal(timestampMicros("2026-11-28T05:38:19+00:00") % 1_000_000, 0);
  assert.equal(
    timestampMicros("2026-11-28T06:38:19.5+01:00"),
    timestampMicros("2026-11-28T05:38:19.500000+00:00"),
  );
});

Deno.test("isUnread(): the other side's messages after one's mark, to the microsecond", () => {
  const conversation = {
    buyer_id: BUYER,
    seller_id: SELLER,
    buyer_last_read_at: "2026-11-28T05:38:19.031174+00:00",
    seller_last_read_at: null,
  };
  const at = (created_at: string, sender_id = SELLER) => ({ sender_id, created_at });
  assert.equal(isUnread(at("2026-11-28T05:38:19.031175+00:00"), conversation, BUYER), true);
  assert.equal(isUnread(at("2026-11-28T05:38:19.031174+00:00"), conversation, BUYER), false);
  assert.equal(isUnread(at("2026-11-28T05:38:19.03+00:00"), conversation, BUYER), false);
  assert.equal(isUnread(at("2026-11-28T05:00:00+00:00", BUYER), conversation, BUYER), false, "own");
  assert.equal(
    isUnread(at("2026-11-28T05:00:00+00:00", BUYER), conversation, SELLER),
    true,
    "no mark",
  );
});

Deno.test("the RPC argument schemas clean text as the database does and refuse what it refuses", () => {
  const parsed = SendMessageArgs.parse({ p_conversation: CONVERSATION, p_body: "  Hi\r\nthere " });
  assert.equal(parsed.p_body, "Hi\nthere");
  for (const body of ["", "  \n", "bell\u0007", "x".repeat(4001)]) {
    assert.equal(
      SendMessageArgs.safeParse({ p_conversation: CONVERSATION, p_body: body }).success,
      false,
    );
  }
  assert.equal(
    SendMessageArgs.safeParse({ p_conversation: CONVERSATION, p_body: "é".repeat(4000) }).success,
    true,
  );
  const request = RequestListingAccessArgs.parse({
    p_listing: CONVERSATION,
    p_nda_version: "1",
    p_message: "   ",
  });
  assert.equal(request.p_message, undefined, "an empty note is no note");
  assert.equal(
    RequestListingAccessArgs.safeParse({ p_listing: CONVERSATION, p_nda_version: "no spaces" })
      .success,
    false,
  );
});
