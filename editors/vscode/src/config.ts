// The `tether.*` settings.
import * as vscode from "vscode";

export interface Settings {
  command: string;
  args: string[];
  env: Record<string, string>;
  trace: boolean;
}

export function readSettings(): Settings {
  const config = vscode.workspace.getConfiguration("tether");
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(config.get<Record<string, unknown>>("env") ?? {})) {
    if (value !== null && value !== undefined) env[name] = String(value);
  }
  return {
    command: config.get<string>("path")?.trim() || "tether",
    args: (config.get<unknown[]>("args") ?? ["acp"]).map(String),
    env,
    trace: config.get<boolean>("trace") ?? false,
  };
}
