// agentcoord's OpenCode plugin, written by `agentcoord setup opencode` (`--remove` deletes it).
// It hands each file write to the agentcoord hook client, a child of this OpenCode process so
// the daemon knows which session writes (docs/other-clis.md "OpenCode"), and throws to deny.
import { spawnSync } from "node:child_process";

const COMMAND = "__AGENTCOORD__";

function hook(event, payload) {
  const out = spawnSync(COMMAND, ["hook", event], {
    input: JSON.stringify(payload),
    encoding: "utf8",
    timeout: 5000,
  });
  if (out.status !== 0 || !out.stdout) return {};
  try {
    return JSON.parse(out.stdout).hookSpecificOutput || {};
  } catch {
    return {};
  }
}

// OpenCode's tools, as the daemon's write guard names them.
function asWrite(tool, args) {
  if ((tool === "write" || tool === "edit") && args && args.filePath) {
    return { tool_name: tool === "write" ? "Write" : "Edit", tool_input: { file_path: args.filePath } };
  }
  if (tool === "patch" && args && args.patchText) {
    return { tool_name: "apply_patch", tool_input: { command: args.patchText } };
  }
  return null;
}

export const AgentCoord = async ({ directory }) => ({
  "tool.execute.before": async (input, output) => {
    const write = asWrite(input.tool, output.args);
    if (!write) return;
    const answer = hook("pre-tool-use", { hook_event_name: "PreToolUse", cwd: directory, ...write });
    if (answer.permissionDecision === "deny") throw new Error(answer.permissionDecisionReason);
  },
  "tool.execute.after": async (input, output) => {
    const answer = hook("post-tool-use", { hook_event_name: "PostToolUse", tool_name: input.tool, cwd: directory });
    if (answer.additionalContext && typeof output.output === "string") {
      output.output += "\n\n" + answer.additionalContext;
    }
  },
});
