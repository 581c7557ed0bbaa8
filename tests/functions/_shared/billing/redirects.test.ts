import assert from "node:assert/strict";
import {
  allowedRedirectOrigins,
  checkRedirect,
  siteUrl,
} from "../../../../supabase/functions/_shared/billing/redirects.ts";
import { Env } from "../../../../supabase/functions/_shared/platform/env.ts";
import { HttpError } from "../../../../supabase/functions/_shared/platform/errors.ts";

Deno.test("checkRedirect() allows only SITE_URL's origin and ALLOWED_REDIRECT_ORIGINS", () => {
  const env = new Env({
    SITE_URL: "https://shop.example.test/app/",
    ALLOWED_REDIRECT_ORIGINS: "https://admin.example.test/, not a url",
  });
  const allowed = allowedRedirectOrigins(env);
  assert.deepEqual([...allowed], ["https://shop.example.test", "https://admin.example.test"]);
  assert.equal(
    checkRedirect("https://shop.example.test/x?y=1", "successUrl", allowed, "go"),
    "https://shop.example.test/x?y=1",
  );
  for (
    const url of [
      "https://shop.example.test.evil/x",
      "http://shop.example.test/x",
      "ftp://shop.example.test/",
      "not a url",
      "https://user@evil.example",
    ]
  ) {
    assert.throws(
      () => checkRedirect(url, "cancelUrl", allowed, "go"),
      (e: unknown) => e instanceof HttpError && e.status === 400,
    );
  }
  assert.equal(siteUrl(env, "/pricing"), "https://shop.example.test/app/pricing");
});

Deno.test("allowedRedirectOrigins() answers 503 not_configured without SITE_URL", () => {
  assert.throws(
    () => allowedRedirectOrigins(new Env({})),
    (e: unknown) => e instanceof HttpError && e.status === 503 && e.code === "not_configured",
  );
});
