// Messages between the extension host and the chat webview.
import type { ChatEvent, ChatState } from "./model";

/** Extension -> webview. */
export type ToWebview = { type: "reset"; state: ChatState } | { type: "events"; events: ChatEvent[] };

/** Webview -> extension. */
export type FromWebview =
  | { type: "ready" }
  | { type: "prompt"; text: string }
  | { type: "cancel" }
  | { type: "newSession" }
  | { type: "restart" }
  | { type: "openSettings" }
  | { type: "showLog" }
  | { type: "permission"; key: number; optionId: string }
  | { type: "elicitation"; key: number; action: "accept" | "decline" | "cancel"; content?: Record<string, unknown> }
  | { type: "setConfigOption"; configId: string; value: string | boolean }
  | { type: "setMode"; modeId: string }
  | { type: "openDiff"; itemId: string; index: number }
  | { type: "openLocation"; path: string; line?: number | null }
  | { type: "showTerminal"; terminalId: string }
  | { type: "history"; open: boolean }
  | { type: "historyMore" }
  | { type: "openSession"; sessionId: string; cwd: string };
