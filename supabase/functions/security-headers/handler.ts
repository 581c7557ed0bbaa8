/**
 * `security-headers` (public): the security header set the frontend host
 * should serve. Every function response already carries the same set.
 *
 * @module
 */
import { defineFunction } from "../_shared/function.ts";

export default defineFunction("security-headers", {
  handle({ ctx }) {
    return { headers: { ...ctx.runtime.securityHeaders } };
  },
});
