import assert from "node:assert/strict";
import { Resend } from "resend";
import { EmailDouble, resendClient } from "./email_double.ts";

Deno.test("email: the SDK sends through the double, which keeps the message", async () => {
  await using double = new EmailDouble();
  const resend = resendClient(double);

  const { data, error } = await resend.emails.send({
    from: "Marketplace <no-reply@market.example.test>",
    to: "ada@example.test",
    subject: "Your order",
    html: "<p>Thanks!</p>",
    replyTo: "support@market.example.test",
    tags: [{ name: "kind", value: "order_confirmation" }],
  });

  assert.equal(error, null);
  assert.match(data!.id, /^[0-9a-f-]{36}$/);
  assert.equal(double.sent.length, 1);
  const [sent] = double.sentTo("ada@example.test");
  assert.equal(sent?.subject, "Your order");
  assert.deepEqual(sent?.replyTo, ["support@market.example.test"]);
  assert.equal(
    double.requests[0]?.headers.get("authorization"),
    "Bearer re_test_double_0000000000",
  );

  const fetched = await resend.emails.get(data!.id);
  assert.equal(fetched.data?.subject, "Your order");
  assert.deepEqual(fetched.data?.to, ["ada@example.test"]);
});

Deno.test("email: validation, auth and injected failures come back as the API's error shape", async () => {
  await using double = new EmailDouble();
  const resend = resendClient(double);

  const missing = await resend.emails.send({
    from: "no-reply@market.example.test",
    to: "ada@example.test",
    subject: "",
    text: "hi",
  });
  assert.equal(missing.data, null);
  assert.deepEqual(missing.error, {
    statusCode: 422,
    name: "missing_required_field",
    message: "Missing `subject` field.",
  });

  const badFrom = await resend.emails.send({
    from: "not an address",
    to: "ada@example.test",
    subject: "x",
    text: "hi",
  });
  assert.equal(badFrom.error?.name, "invalid_from_address");

  const unauthorized = await new Resend("sk_wrong", { baseUrl: double.url }).emails.send({
    from: "no-reply@market.example.test",
    to: "ada@example.test",
    subject: "x",
    text: "hi",
  });
  assert.deepEqual(unauthorized.error, {
    statusCode: 403,
    name: "invalid_api_key",
    message: "API key is invalid",
  });

  double.failNext({ path: "/emails", status: 429, headers: { "retry-after": "1" } });
  const limited = await resend.emails.send({
    from: "no-reply@market.example.test",
    to: "ada@example.test",
    subject: "x",
    text: "hi",
  });
  assert.equal(limited.error?.statusCode, 429);
  assert.equal(limited.error?.name, "rate_limit_exceeded");
  assert.equal(limited.headers?.["retry-after"], "1");
  assert.equal(double.sent.length, 0);
});

Deno.test("email: idempotency keys and batch sends", async () => {
  await using double = new EmailDouble();
  const resend = resendClient(double);
  const message = {
    from: "no-reply@market.example.test",
    to: ["ada@example.test"],
    subject: "Receipt",
    text: "Paid.",
  };

  const first = await resend.emails.send(message, { idempotencyKey: "receipt-o_1" });
  const again = await resend.emails.send(message, { idempotencyKey: "receipt-o_1" });
  assert.equal(again.data?.id, first.data?.id);
  assert.equal(double.sent.length, 1);
  const conflict = await resend.emails.send({ ...message, text: "Changed" }, {
    idempotencyKey: "receipt-o_1",
  });
  assert.equal(conflict.error?.name, "invalid_idempotent_request");

  const batch = await resend.batch.send([message, { ...message, to: ["bob@example.test"] }]);
  assert.equal(batch.data?.data.length, 2);
  assert.equal(double.sent.filter((m) => m.batch).length, 2);

  const strict = await resend.batch.send([message, { ...message, to: ["broken"] }]);
  assert.equal(strict.error?.statusCode, 422);
  const permissive = await resend.batch.send([message, { ...message, to: ["broken"] }], {
    batchValidation: "permissive",
  });
  assert.equal(permissive.data?.data.length, 1);
  assert.deepEqual(permissive.data?.errors.map((e) => e.index), [1]);
});
