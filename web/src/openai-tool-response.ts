// A chat answer read back into content and tool calls, as `smolinfer serve`
// shapes it (server/openai_response.cpp, ResponseShaper): the engine parses
// (each piece brings its parse of the answer so far, WireToolOutput); this
// turns the parses into message.tool_calls, or (streaming) into deltas: the
// content as it grows, each call whole in one delta once it is closed.
// Text that ends inside a call, or that no call can be, is content.
import type { ChatCompletionChunkToolCall, ChatCompletionMessageToolCall } from "./openai-types.js";
import type { WireToolOutput } from "./protocol.js";

export type ToolDelta = { content: string } | { tool_calls: ChatCompletionChunkToolCall[] };

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

/** "call_" and 24 random letters and digits (the server's form). */
function newCallId(): string {
  const bytes = new Uint8Array(24);
  crypto.getRandomValues(bytes);
  return "call_" + Array.from(bytes, (b) => ALPHABET[b % ALPHABET.length]).join("");
}

/** C's isspace, as the server strips it (not JavaScript's wider trimStart). */
const withoutLeadingSpace = (s: string) => s.replace(/^[ \t\n\r\f\v]+/, "");

export class ToolAnswer {
  private text = "";
  private parse: WireToolOutput | undefined; // of the whole text so far
  private sentContent = 0; // streaming: UTF-16 units of content sent
  private sentCalls = 0;
  private ids: string[] = [];

  /** A piece of the answer and the engine's parse of all of it (none when the answer is not read for calls). */
  add(text: string, parse: WireToolOutput | undefined): void {
    this.text += text;
    if (parse) this.parse = parse;
  }

  /** Whether the engine reads this answer for calls (its template's calls are JSON). */
  get reading(): boolean {
    return this.parse !== undefined;
  }

  /** Streaming: any call was sent (the finish reason is then "tool_calls"). */
  get called(): boolean {
    return this.sentCalls > 0;
  }

  private id(index: number): string {
    while (this.ids.length <= index) this.ids.push(newCallId());
    return this.ids[index];
  }

  /** Streaming: what the answer so far adds (final: after the last piece). */
  deltas(final: boolean): ToolDelta[] {
    const out: ToolDelta[] = [];
    const parse = this.parse ?? { status: "complete", content: "", calls: [], closed: 0 };
    const content = (text: string) => {
      if (text.length <= this.sentContent) return;
      out.push({ content: text.slice(this.sentContent) });
      this.sentContent = text.length;
    };
    if (parse.status === "invalid" || (final && parse.status === "incomplete")) {
      // Not a call after all: the text is content (what was sent is its start).
      if (final && this.sentCalls === 0) content(withoutLeadingSpace(this.text));
      return out;
    }
    content(parse.content);
    for (; this.sentCalls < parse.closed; this.sentCalls++) {
      const c = parse.calls[this.sentCalls];
      out.push({
        tool_calls: [{ index: this.sentCalls, id: this.id(this.sentCalls), type: "function", function: { name: c.name, arguments: c.arguments } }],
      });
    }
    return out;
  }

  /** Not streaming: the message's content and calls. */
  message(): { content: string; tool_calls?: ChatCompletionMessageToolCall[] } {
    const parse = this.parse;
    if (!parse) return { content: this.text };
    if (parse.status !== "complete") return { content: withoutLeadingSpace(this.text) };
    if (parse.calls.length === 0) return { content: parse.content };
    return {
      content: parse.content,
      tool_calls: parse.calls.map((c, i) => ({ id: this.id(i), type: "function", function: { name: c.name, arguments: c.arguments } })),
    };
  }
}
