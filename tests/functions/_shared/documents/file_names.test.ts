import assert from "node:assert/strict";
import {
  checkFileName,
  MAX_FILE_NAME_LENGTH,
} from "../../../../supabase/functions/_shared/documents/file_names.ts";

Deno.test("checkFileName keeps plain names and folds the cosmetic", () => {
  assert.deepEqual(checkFileName("Contract v2 (signed).pdf"), { name: "Contract v2 (signed).pdf" });
  assert.deepEqual(checkFileName("résumé final.PDF"), { name: "resume final.PDF" });
  assert.deepEqual(checkFileName("..hidden.txt"), { name: "hidden.txt" });
  assert.deepEqual(checkFileName("a&b?c#d%e.zip"), { name: "a_b_c_d_e.zip" });
  assert.deepEqual(checkFileName("  spaced   out  .png"), { name: "spaced out .png" });
  assert.deepEqual(checkFileName("报告 2026.pdf"), { name: "2026.pdf" });
});

Deno.test("checkFileName refuses folders, traversal, control and invisible characters", () => {
  for (
    const name of [
      "../../etc/passwd",
      "..\\..\\windows\\win.ini",
      "folder/file.pdf",
      "file\u0000.pdf",
      "line\nbreak.txt",
      "invoice\u202Efdp.exe",
      "zero\u200Bwidth.pdf",
    ]
  ) {
    assert.ok("refused" in checkFileName(name), name);
  }
  for (const name of ["..", "...", "___", "☃☃.☃"]) {
    assert.ok("refused" in checkFileName(name), name);
  }
});

Deno.test("checkFileName cuts long names and keeps the extension", () => {
  const checked = checkFileName(`${"a".repeat(300)}.pdf`);
  assert.ok("name" in checked);
  assert.equal(checked.name.length, MAX_FILE_NAME_LENGTH);
  assert.ok(checked.name.endsWith("a.pdf"));
});
