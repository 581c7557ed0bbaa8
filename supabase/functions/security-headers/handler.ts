/**
 * `security-headers` (public): the security header set the frontend host
 * should serve. Every function response already carries the same set.
 *
 * @module
 */
import { defineFunction } from "../_shared/platform/function.ts";

export default defineFunction({
  name: "security-headers",
  access: "public",
  group: "utilities",
  summary: "The security header set",
  output: "SecurityHeadersOutput",
  handle({ ctx }) {
    return { headers: { ...ctx.runtime.securityHeaders } };
  },
});
