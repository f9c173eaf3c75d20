// Pure pieces the node tests call directly (bundled to out/testing.js, left out of the .vsix).
export { apply, describeStatus, initialState, stopText } from "./chat/model";
export { hunks, lineDiff } from "./webview/diff";
export { renderMarkdown } from "./webview/markdown";
export { sliceLines } from "./host/workspaceFs";
export { display, trimToBytes } from "./host/terminals";
