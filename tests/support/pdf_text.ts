/**
 * Reading generated PDFs back in tests: the text as a real PDF reader
 * (pdf.js) extracts it, independent of the code that drew it, and the
 * document information dictionary and raw page content as pdf-lib parses them.
 *
 * @module
 */
import * as pdfjs from "pdfjs-dist/legacy/build/pdf.mjs";
import { decodePDFRawStream, PDFArray, PDFDocument, PDFRawStream } from "pdf-lib";

/** A PDF's extracted text: one string per page (lines joined by "\n") and all of it. */
export interface PdfText {
  pages: string[];
  /** Every page's text, pages separated by a blank line. */
  text: string;
  pageCount: number;
}

/** What the document information dictionary says. */
export interface PdfInfo {
  title: string | undefined;
  author: string | undefined;
  subject: string | undefined;
  creator: string | undefined;
  producer: string | undefined;
  creationDate: Date | undefined;
  modificationDate: Date | undefined;
  pageCount: number;
}

/** A run of text on a page as pdf.js reports it, in points from the bottom left. */
export interface PdfRun {
  str: string;
  x: number;
  y: number;
  width: number;
  /** Followed by a line break (pdf.js's guess). */
  hasEOL: boolean;
}

/** One page's size and text runs. */
export interface PdfPageRuns {
  width: number;
  height: number;
  runs: PdfRun[];
}

/** Runs closer than this (in points) on one baseline are one word; farther apart get a space. */
const GAP = 1;

/**
 * Every page's size and text runs as pdf.js extracts them from `bytes`
 * (for assertions about where text landed).
 */
export async function pdfRuns(bytes: Uint8Array): Promise<PdfPageRuns[]> {
  const doc = await pdfjs.getDocument({
    data: bytes.slice(),
    isEvalSupported: false,
    useSystemFonts: false,
    verbosity: 0,
  }).promise;
  try {
    const pages: PdfPageRuns[] = [];
    for (let n = 1; n <= doc.numPages; n++) {
      const page = await doc.getPage(n);
      const [x0 = 0, y0 = 0, x1 = 0, y1 = 0] = page.view;
      const content = await page.getTextContent();
      const runs = content.items.flatMap((item) =>
        "str" in item
          ? [{
            str: item.str,
            x: Number(item.transform[4]),
            y: Number(item.transform[5]),
            width: item.width,
            hasEOL: item.hasEOL,
          }]
          : []
      );
      pages.push({ width: x1 - x0, height: y1 - y0, runs });
    }
    return pages;
  } finally {
    await doc.destroy();
  }
}

/**
 * The text of every page of `bytes`, extracted with pdf.js: runs on one
 * baseline are joined (with a space where they are drawn apart), a new
 * baseline or an end-of-line mark starts a new line.
 */
export async function pdfText(bytes: Uint8Array): Promise<PdfText> {
  const pages = (await pdfRuns(bytes)).map((page) => linesOf(page.runs).join("\n"));
  return { pages, text: pages.join("\n\n"), pageCount: pages.length };
}

/** The lines a page's runs make, top to bottom as drawn. */
function linesOf(runs: PdfRun[]): string[] {
  const lines: string[] = [];
  let line = "";
  let baseline: number | undefined;
  let end = 0;
  for (const run of runs) {
    const { x, y } = run;
    if (baseline !== undefined && Math.abs(y - baseline) > GAP) {
      lines.push(line);
      line = "";
    } else if (line !== "" && run.str !== "" && Math.abs(x - end) > GAP) {
      line += " ";
    }
    line += run.str;
    baseline = y;
    end = x + run.width;
    if (run.hasEOL) {
      lines.push(line);
      line = "";
      baseline = undefined;
    }
  }
  if (line !== "") lines.push(line);
  return lines.filter((l) => l.trim() !== "");
}

/** The document information dictionary of `bytes` and its page count, read with pdf-lib. */
export async function pdfInfo(bytes: Uint8Array): Promise<PdfInfo> {
  const doc = await PDFDocument.load(bytes, { updateMetadata: false });
  return {
    title: doc.getTitle(),
    author: doc.getAuthor(),
    subject: doc.getSubject(),
    creator: doc.getCreator(),
    producer: doc.getProducer(),
    creationDate: doc.getCreationDate(),
    modificationDate: doc.getModificationDate(),
    pageCount: doc.getPageCount(),
  };
}

/**
 * Each page's content streams, decoded and concatenated as Latin-1 text:
 * the operators a PDF viewer executes (`BT … Tj … ET`), for assertions that
 * user text did not become operators.
 */
export async function pdfContentStreams(bytes: Uint8Array): Promise<string[]> {
  const doc = await PDFDocument.load(bytes, { updateMetadata: false });
  return doc.getPages().map((page) => {
    const contents = page.node.Contents();
    const streams = contents instanceof PDFArray
      ? contents.asArray().map((ref) => doc.context.lookup(ref))
      : [contents];
    return streams.map((stream) => latin1(decoded(stream))).join("\n");
  });
}

/** A loaded document's stream, decoded (a loaded document holds raw streams only). */
function decoded(stream: unknown): Uint8Array {
  if (stream === undefined) return new Uint8Array();
  if (!(stream instanceof PDFRawStream)) {
    throw new TypeError("Cannot decode a page's content: not a stream");
  }
  return decodePDFRawStream(stream).decode();
}

function latin1(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => String.fromCharCode(b)).join("");
}
