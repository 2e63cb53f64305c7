// agentcoord's OpenCode plugin, written by `agentcoord setup opencode` (`--remove` deletes it).
// It hands each file write, each shell command, each prompt, each session's start, each
// turn's end and each permission it asks for to the agentcoord hook client, a child of this
// OpenCode process so the daemon knows which session calls (docs/opencode.md), and throws to
// deny a write or a git command. While a session is idle it waits for the session's messages
// and starts a turn with them (docs/opencode.md "Wake-ups").
import { randomBytes } from "node:crypto";
import { spawn, spawnSync } from "node:child_process";

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

// Waits per idle spell: each lasts up to the daemon's bound (10 minutes), so an idle session
// is woken for an hour; later messages wait for the user's next prompt.
const WAITS = 6;
const WAKE = "agentcoord delivered these messages while you were idle (not the user's words); act on them as you see fit.";

// `agentcoord hook inbox-wait`, a child like every hook (so the daemon knows the session),
// but not waited for: done(text, ended) once it exits, with the messages it took ("" for
// none), and ended true when it ran to its bound.
function inboxWait(directory, done) {
  let out = "";
  let finished = false;
  const finish = (code) => {
    if (finished) return;
    finished = true;
    let text = "";
    try {
      text = JSON.parse(out).hookSpecificOutput.additionalContext || "";
    } catch {}
    done(text, code === 0);
  };
  const child = spawn(COMMAND, ["hook", "inbox-wait"], { stdio: ["pipe", "pipe", "ignore"] });
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => (out += chunk));
  child.on("error", () => finish(1));
  child.on("close", (code) => finish(code));
  child.stdin.on("error", () => {});
  child.stdin.end(JSON.stringify({ hook_event_name: "InboxWait", cwd: directory }));
  return child;
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

export const AgentCoord = async ({ directory, client }) => {
  // What SessionStart said, per OpenCode session: asked once, at the session's first model
  // request, and kept in its system prompt from then on.
  const started = new Map();
  // Subagents' sessions (a task's), whose turns are part of their parent's.
  const children = new Set();
  // The one inbox wait of each idle session, and messages a wait took as its session turned
  // busy (handed to that turn's next hook, else to a turn of their own at its end).
  const waits = new Map();
  const taken = new Map();
  const keep = (id, text) => taken.set(id, taken.has(id) ? `${taken.get(id)}\n\n${text}` : text);
  const takeKept = (id) => {
    const text = taken.get(id) || "";
    taken.delete(id);
    return text;
  };

  async function wake(id, text) {
    try {
      await client.session.promptAsync({
        path: { id },
        body: { parts: [{ type: "text", text: `${WAKE}\n\n${text}`, synthetic: true }] },
      });
    } catch {
      keep(id, text); // the next turn's first hook hands them over
    }
  }

  function arm(id, left) {
    if (waits.has(id) || left <= 0 || !client) return;
    const entry = {};
    entry.child = inboxWait(directory, (text, ended) => {
      if (waits.get(id) !== entry) {
        if (text) keep(id, text); // cancelled as it answered: the busy turn takes them
        return;
      }
      waits.delete(id);
      if (text) wake(id, text);
      else if (ended) arm(id, left - 1);
    });
    waits.set(id, entry);
  }

  // The session turned busy through the user: its messages go the normal way (the hooks).
  // The daemon ends the wait (inbox-wait-cancel) rather than the child being killed: a wait
  // that had already taken messages still hands them over, to this turn's next hook.
  function cancel(id) {
    const entry = waits.get(id);
    if (!entry) return;
    waits.delete(id);
    hook("inbox-wait-cancel", { hook_event_name: "InboxWaitCancel", cwd: directory });
  }
  process.on("exit", () => {
    for (const entry of waits.values()) entry.child.kill();
  });

  return {
    // The session's state (docs/activity.md "Other CLIs"): a turn ended, or a call waits for
    // the user's permission.
    event: async ({ event }) => {
      const props = event.properties || {};
      if (event.type === "session.created" && props.info && props.info.parentID) {
        children.add(props.info.id);
      } else if (event.type === "session.idle" && !children.has(props.sessionID)) {
        hook("stop", { hook_event_name: "Stop", cwd: directory });
        const kept = takeKept(props.sessionID);
        if (kept) wake(props.sessionID, kept);
        else arm(props.sessionID, WAITS);
      } else if (event.type === "session.status" && props.status && props.status.type === "busy") {
        cancel(props.sessionID);
      } else if (event.type === "session.deleted" && props.info) {
        cancel(props.info.id);
        taken.delete(props.info.id);
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
      cancel(input.sessionID);
      const answer = hook("user-prompt-submit", { hook_event_name: "UserPromptSubmit", cwd: directory });
      const kept = takeKept(input.sessionID);
      const text = [kept, answer.additionalContext].filter(Boolean).join("\n\n");
      if (!text || !output.message || !Array.isArray(output.parts)) {
        if (kept) keep(input.sessionID, kept);
        return;
      }
      // A synthetic part: sent to the model, not drawn as the user's words.
      output.parts.push({
        id: partId(),
        messageID: output.message.id,
        sessionID: input.sessionID,
        type: "text",
        text,
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
      if (typeof output.output !== "string") return;
      const text = [takeKept(input.sessionID), answer.additionalContext].filter(Boolean).join("\n\n");
      if (text) output.output += "\n\n" + text;
    },
  };
};
