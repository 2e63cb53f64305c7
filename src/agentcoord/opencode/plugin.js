// agentcoord's OpenCode plugin, written by `agentcoord setup opencode` (`--remove` deletes it).
// It hands each file write, each shell command, each prompt, each session's start, each
// turn's end and each permission it asks for to the agentcoord hook client, a child of this
// OpenCode process so the daemon knows which session calls (docs/opencode.md), and throws to
// deny a write or a git command.
import { randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";

const COMMAND = "__AGENTCOORD__";
// The tools the daemon's guards read and the fields of their args it needs, as setup wrote
// them from opencode/opencodetools.py: {"write": ["filePath"], "bash": ["command", "workdir"], ...}.
const TOOLS = "__TOOLS__";

function hook(event, payload) {
  const out = spawnSync(COMMAND, ["hook", event], {
    input: JSON.stringify(payload),
    encoding: "utf8",
    timeout: event === "session-start" ? 10000 : 5000,
  });
  if (out.status !== 0 || !out.stdout) return {};
  try {
    return JSON.parse(out.stdout).hookSpecificOutput || {};
  } catch {
    return {};
  }
}

// A call of one of TOOLS as the daemon's PreToolUse reads it: OpenCode's own tool name, and
// only the fields the guards need (not a write's whole content).
function asCall(tool, args) {
  const fields = Object.hasOwn(TOOLS, tool) ? TOOLS[tool] : null;
  if (!fields || !args || !args[fields[0]]) return null;
  const input = {};
  for (const name of fields) if (args[name] !== undefined) input[name] = args[name];
  return { tool_name: tool, tool_input: input };
}

// A part id as OpenCode makes them ("prt_", 12 hex digits of the time, 14 random characters),
// with the time's last counter value so that it sorts after the prompt's own parts.
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
function partId() {
  const time = (BigInt(Date.now()) * 4096n + 4095n).toString(16).padStart(12, "0").slice(-12);
  const tail = Array.from(randomBytes(14), (b) => BASE62[b % 62]).join("");
  return `prt_${time}${tail}`;
}

// What a permission.asked event asks about, as the daemon reads a call's input: a command,
// else a file, else the patterns the permission is for.
function askedInput(asked) {
  const meta = asked.metadata || {};
  if (typeof meta.command === "string") return { command: meta.command };
  if (typeof meta.filepath === "string") return { file_path: meta.filepath };
  return { pattern: (asked.patterns || []).join(" ") };
}

export const AgentCoord = async ({ directory }) => {
  // What SessionStart said, per OpenCode session: asked once, at the session's first model
  // request, and kept in its system prompt from then on.
  const started = new Map();
  // Subagents' sessions (a task's), whose turns are part of their parent's.
  const children = new Set();
  return {
    // The session's state (docs/activity.md "Other CLIs"): a turn ended, or a call waits for
    // the user's permission.
    event: async ({ event }) => {
      const props = event.properties || {};
      if (event.type === "session.created" && props.info && props.info.parentID) {
        children.add(props.info.id);
      } else if (event.type === "session.idle" && !children.has(props.sessionID)) {
        hook("stop", { hook_event_name: "Stop", cwd: directory });
      } else if (event.type === "permission.asked") {
        hook("notification", {
          hook_event_name: "Notification",
          notification_type: "permission_prompt",
          cwd: directory,
          tool_name: props.permission,
          tool_input: askedInput(props),
        });
      }
    },
    "experimental.chat.system.transform": async (input, output) => {
      if (!input.sessionID || !Array.isArray(output.system)) return;
      let text = started.get(input.sessionID);
      if (text === undefined) {
        const answer = hook("session-start", {
          hook_event_name: "SessionStart",
          source: "startup",
          cwd: directory,
        });
        text = answer.additionalContext || "";
        started.set(input.sessionID, text);
      }
      if (text) output.system.push(text);
    },
    "chat.message": async (input, output) => {
      const answer = hook("user-prompt-submit", { hook_event_name: "UserPromptSubmit", cwd: directory });
      if (!answer.additionalContext || !output.message || !Array.isArray(output.parts)) return;
      // A synthetic part: sent to the model, not drawn as the user's words.
      output.parts.push({
        id: partId(),
        messageID: output.message.id,
        sessionID: input.sessionID,
        type: "text",
        text: answer.additionalContext,
        synthetic: true,
      });
    },
    "tool.execute.before": async (input, output) => {
      const call = asCall(input.tool, output.args);
      if (!call) return;
      const answer = hook("pre-tool-use", { hook_event_name: "PreToolUse", cwd: directory, ...call });
      if (answer.permissionDecision === "deny") throw new Error(answer.permissionDecisionReason);
    },
    "tool.execute.after": async (input, output) => {
      const answer = hook("post-tool-use", { hook_event_name: "PostToolUse", tool_name: input.tool, cwd: directory });
      if (answer.additionalContext && typeof output.output === "string") {
        output.output += "\n\n" + answer.additionalContext;
      }
    },
  };
};
