// facets bridge for Pi. Written by `facets pi-extension install` as index.js,
// which TypeScript compiles from this file; the source of truth is
// runtime/pibridge/extension/index.ts in the facets repository.
//
// This file only maps Pi's extension API onto the facets binary. Profiles,
// prompt sections and the channel protocol are decided in Go:
//   facets pi-extension plan   -> what to apply at startup (JSON)
//   facets pi-extension serve  -> channel deliveries, receipts and Sub talk
//   facets delegate|talk|interrupt|close|list -> the Main's tools
//   facets invoke -> /sub:<profile>
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { VERSION as PI_VERSION, parseArgs } from "@earendil-works/pi-coding-agent";
import type { ExtensionAPI, ExtensionContext, SessionEntry, ToolInfo } from "@earendil-works/pi-coding-agent";

const SELF = fileURLToPath(import.meta.url);
// PROTOCOL is this file's side of the version handshake (pibridge.Protocol
// in Go; a test keeps the two equal). Extensions from before the handshake
// are protocol 1; protocol 3 sends the plan its request on stdin.
const PROTOCOL = 4;
// MIN_PI is the oldest Pi facets supports and tests (versions.env
// pi_min_version; a Go test keeps the two equal).
const MIN_PI = "1.5.2";
// PLAN_ENV is every variable a startup plan reads (envvar.Plan in Go; a
// test keeps the two equal): all the plan daemon is sent of this process's
// environment, so API keys and the like never leave Pi.
const PLAN_ENV = ["PI_CODING_AGENT_DIR", "HOME", "XDG_RUNTIME_DIR", "TMPDIR", "FACETS_MANIFEST", "FACETS_ROLE_PACKS", "FACETS_BUNDLED_ROLES", "PI_FACETS_CHANNEL", "PI_FACETS_TOKEN_FILE", "PI_FACETS_TOKEN", "FACETS_STATE_DIR"];
// tooOld is the one line an older Pi gets, or undefined.
const tooOld = olderVersion(PI_VERSION, MIN_PI)
  ? `Facets needs Pi ${MIN_PI} or newer; this is Pi ${PI_VERSION}. Update Pi (npm install -g @earendil-works/pi-coding-agent), or remove the facets extension to use this Pi without Facets.`
  : undefined;

// olderVersion reports whether version v (major.minor.patch, anything after
// a "-" or "+" ignored) is older than min.
function olderVersion(v: string, min: string): boolean {
  const parts = (s: string) => s.split(/[-+]/)[0].split(".").map((x) => Number.parseInt(x, 10) || 0);
  const a = parts(v), b = parts(min);
  for (let i = 0; i < 3; i++) if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  return false;
}
const FIX = "facets pi-extension install";
const DELIVERY_PREFIX = "[Facets delivery v1] ";
const ROLE_DISCOVERY = "pi-herdr-subagents:roles:discover:v1";
const INFLIGHT = Symbol.for("facets.bridge.inflight.v1");

type Plan = {
  role: "main" | "sub";
  protocol?: number;
  facets?: string;
  mismatch?: string;
  sections: Record<string, string>;
  profile?: { name: string; provider?: string; modelId?: string; thinkingLevel?: string; thinkingDefault?: boolean; tools: string[]; skills: string[] };
  commands?: { name: string; profile: string; description: string }[];
  tools?: PlanTool[];
  profiles: { text: string; level: "info" | "warning" };
  error?: string;
  kickoff?: string;
  task?: string;
  selfStart?: boolean;
  warnings?: string[];
  serve?: boolean;
  trusted?: boolean;
};
// PlanTool is a model-facing tool as the Go plan defines it (pibridge.Tool):
// its text and schema, and how a call maps onto a facets command.
type PlanTool = {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  command?: string[];
  launch?: boolean;
  flags?: { param: string; flag: string }[];
  input?: string;
  serve?: string;
  closes?: boolean;
  exposure?: "direct" | "model-only";
  executionMode?: "sequential" | "parallel";
  terminate?: boolean;
};
type Params = Record<string, unknown>;
type ThinkingLevel = Parameters<ExtensionAPI["setThinkingLevel"]>[0];
// unstartable is set when the facets binary could not be started at all
// (missing, not executable), as opposed to one that ran and failed.
type Result = { code: number; stdout: string; stderr: string; unstartable?: boolean };
type BridgeEvent = { type: string; id?: number; runId?: string; messageId?: string; text?: string; error?: string; reason?: string };
// RunnerAnswer is what the runtime commands print with --format json.
type RunnerAnswer = { ok: boolean; text?: string; error?: string; [k: string]: unknown };

// CONF is facets-bridge.json beside this file, read once: the binary that
// installed it and that binary's version.
const CONF = bridgeConfig();
function bridgeConfig(): { facetsBin?: string; facetsVersion?: string } {
  try {
    const conf = JSON.parse(readFileSync(join(dirname(SELF), "facets-bridge.json"), "utf8"));
    if (conf && typeof conf === "object") return conf;
  } catch {
    // no config beside the extension: use PATH
  }
  return {};
}
// FACETS is the facets binary to run: $FACETS_BIN, else the one
// facets-bridge.json records, else "facets" from PATH.
const FACETS = process.env.FACETS_BIN || (typeof CONF.facetsBin === "string" && CONF.facetsBin) || "facets";
const EXT_VERSION = typeof CONF.facetsVersion === "string" ? CONF.facetsVersion : "";

// PLAN_SOCKET is where the plan daemon of this binary and this extension
// listens (pibridge.RunDaemon): in facets' runtime root, which is the
// channels' (channel.RuntimeRoot in Go), named after both paths so another
// binary or extension never answers. FACETS_PLAN_DAEMON=0 turns it off.
const PLAN_SOCKET = process.env.FACETS_PLAN_DAEMON === "0" ? "" : planSocket();
function planSocket(): string {
  let h = 0x811c9dc5; // FNV-1a, 32 bits
  for (const c of `${FACETS}\0${SELF}`) h = Math.imul(h ^ c.codePointAt(0)!, 0x01000193) >>> 0;
  const root = join(process.env.XDG_RUNTIME_DIR || tmpdir(), `pi-facets-${process.geteuid?.() ?? 0}`);
  return join(root, `plan-${h.toString(16).padStart(8, "0")}.sock`);
}

// processDir is Pi's working directory, which a spawned plan would
// inherit; undefined if it was removed (process.cwd throws then).
function processDir(): string | undefined {
  try {
    return process.cwd();
  } catch {
    return undefined;
  }
}

// Daemon is a connection to the plan daemon, opened when Pi loads the
// extension; ask sends the plan call and settles with the daemon's answer,
// or with undefined if it has none (gone, refused, replaced), and then the
// extension spawns the plan itself; close drops a connection never asked.
// Until asked, the connection does not keep Pi alive.
type Daemon = { ask: (args: string[], stdin: string, cwd: string) => Promise<Result | undefined>; close: () => void };
// DAEMON_WAIT bounds one answer; a daemon that takes longer is treated as gone.
const DAEMON_WAIT = 10_000;
function connectDaemon(): Promise<Daemon | undefined> {
  if (!PLAN_SOCKET) return Promise.resolve(undefined);
  return new Promise((resolve) => {
    let sock: Socket;
    try {
      sock = connect(PLAN_SOCKET);
    } catch {
      resolve(undefined);
      return;
    }
    let answer: ((r: Result | undefined) => void) | undefined;
    let data = "";
    let closed = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const done = (r: Result | undefined) => {
      closed = true;
      if (timer) clearTimeout(timer);
      answer?.(r);
      answer = undefined;
      sock.destroy();
    };
    sock.setEncoding("utf8");
    sock.on("error", () => {
      resolve(undefined);
      done(undefined);
    });
    sock.on("close", () => done(undefined));
    sock.on("data", (d: string) => {
      data += d;
      const nl = data.indexOf("\n");
      if (nl < 0) return;
      try {
        const r = JSON.parse(data.slice(0, nl)) as { code: number; stdout: string; stderr: string };
        done({ code: r.code, stdout: r.stdout, stderr: r.stderr });
      } catch {
        done(undefined);
      }
    });
    sock.on("connect", () => {
      sock.unref();
      resolve({
        ask: (args, stdin, cwd) =>
          new Promise((r) => {
            if (closed) return r(undefined);
            answer = r;
            sock.ref();
            timer = setTimeout(() => done(undefined), DAEMON_WAIT);
            const env = PLAN_ENV.flatMap((k) => (process.env[k] === undefined ? [] : [`${k}=${process.env[k]}`]));
            sock.write(JSON.stringify({ v: 1, args, env, dir: cwd, stdin }) + "\n");
          }),
        close: () => done(undefined),
      });
    });
  });
}

// olderBinary is the handshake message for a facets that printed no plan
// because it does not know --protocol, or whose plan has no protocol: it is
// older than the handshake. It says the same as pibridge.Mismatch in Go.
async function olderBinary(): Promise<string> {
  const r = await run(["--version"]);
  const v = /^facets version (\S+)/.exec(r.stdout)?.[1] ?? "unknown version";
  const ext = `protocol ${PROTOCOL}, installed by facets ${EXT_VERSION || "unknown version"}`;
  return `The facets Pi extension (${ext}) does not match the facets binary (protocol 1, facets ${v} at ${FACETS}). Run \`${FIX}\` with the facets you want Pi to use, then restart Pi.`;
}

// Proc is a running facets command: result settles when it has exited;
// finish writes its input (large or secret values never travel on a
// command line) and closes its stdin; hold(false) lets Pi exit while it
// still runs, hold(true) undoes that.
type Proc = { result: Promise<Result>; finish: (input?: string) => void; hold: (held: boolean) => void };
type Handle = { ref?: () => void; unref?: () => void };

// start spawns facets with args. It never throws: a facets that cannot
// start, exits before reading its input (EPIPE on stdin) or breaks a pipe
// is an answer with a non-zero code, because an unhandled stream error
// would take the whole Pi process down.
function start(args: string[], opts: { cwd?: string; signal?: AbortSignal; env?: NodeJS.ProcessEnv } = {}): Proc {
  let stdout = "";
  let stderr = "";
  let child: ChildProcess;
  let resolve!: (r: Result) => void;
  const result = new Promise<Result>((r) => (resolve = r));
  try {
    child = spawn(FACETS, args, { cwd: opts.cwd, env: opts.env, stdio: ["pipe", "pipe", "pipe"], signal: opts.signal });
  } catch (err) {
    resolve({ code: -1, stdout, stderr: `cannot run ${FACETS}: ${String(err)}`, unstartable: true });
    return { result, finish: () => {}, hold: () => {} };
  }
  const streamError = (err: Error) => (stderr += `${stderr && !stderr.endsWith("\n") ? "\n" : ""}${String(err)}`);
  child.stdout?.on("data", (d) => (stdout += d));
  child.stderr?.on("data", (d) => (stderr += d));
  child.stdout?.on("error", streamError);
  child.stderr?.on("error", streamError);
  // EPIPE here only means facets did not read all of its input; its exit
  // status and output say why.
  child.stdin?.on("error", () => {});
  child.on("error", (err) => resolve({ code: -1, stdout, stderr: stderr + `cannot run ${FACETS}: ${String(err)}`, unstartable: true }));
  child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
  const handles = [child, child.stdin, child.stdout, child.stderr] as Handle[];
  return {
    result,
    finish: (input) => {
      if (child.stdin && !child.stdin.destroyed) child.stdin.end(input ?? "");
    },
    hold: (held) => {
      for (const h of handles) (held ? h?.ref : h?.unref)?.call(h);
    },
  };
}

// run executes facets with args and input on its stdin (see start).
function run(args: string[], opts: { cwd?: string; input?: string; signal?: AbortSignal } = {}): Promise<Result> {
  const p = start(args, opts);
  p.finish(opts.input);
  return p.result;
}

// textOf is the text of a recorded user message (the delivery header is
// always its first text part).
function textOf(message: { role?: string; content?: unknown } | undefined): string | undefined {
  if (!message || message.role !== "user") return undefined;
  const c = message.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) {
    const first: unknown = c[0];
    if (first && typeof first === "object" && "type" in first && first.type === "text" && "text" in first && typeof first.text === "string") return first.text;
  }
  return undefined;
}

// toolArgs maps a tool call onto the command line the plan describes:
// the command, the launch facts if it needs them, then its flags.
function toolArgs(t: PlanTool, params: Params, launch: () => string[]): string[] {
  const out = [...(t.command ?? []), ...(t.launch ? launch() : [])];
  for (const f of t.flags ?? []) {
    const v = params[f.param];
    if (v === undefined || v === null || v === false || v === "") continue;
    if (v === true) out.push(f.flag);
    else out.push(f.flag, String(v));
  }
  return out;
}

// piApprove is Pi's own --approve (true) or --no-approve (false) on this
// process's command line, parsed by Pi's own parser, or undefined. It is an
// explicit trust decision; ctx.isProjectTrusted() alone is not, because Pi
// says "yes" by default for a project that holds nothing Pi itself asks
// trust for (facets' files are not on Pi's list).
function piApprove(): boolean | undefined {
  try {
    return parseArgs(process.argv.slice(2)).projectTrustOverride;
  } catch {
    return undefined;
  }
}

export default function (pi: ExtensionAPI) {
  const isSub = process.env.PI_FACETS_ROLE === "sub";
  let plan: Plan | undefined;
  let startError: string | undefined;
  let ctxRef: ExtensionContext | undefined;
  let serve: ChildProcess | undefined;
  let nextId = 1;
  const pending = new Map<number, (e: BridgeEvent) => void>();
  const registered = new Set<string>();
  const registeredTools = new Set<string>();
  let trusted = false;
  let rolePacks: string[] = [];
  let noModelReported = false;
  let mismatchWarned = false;
  // Deliveries handed to Pi but not yet recorded, per session. Pi may keep
  // its follow-up queue across /reload, so this lives on globalThis and the
  // next bridge instance tells facets serve not to offer them again.
  const store = globalThis as typeof globalThis & { [INFLIGHT]?: Map<string, Set<string>> };
  const inflightBySession = (store[INFLIGHT] ??= new Map<string, Set<string>>());
  const inflight = () => {
    const id = ctxRef?.sessionManager.getSessionId() ?? "";
    let set = inflightBySession.get(id);
    if (!set) inflightBySession.set(id, (set = new Set()));
    return set;
  };

  const report = (msg: string, level: "info" | "warning" | "error" = "error") => {
    if (ctxRef?.hasUI) ctxRef.ui.notify(msg, level);
    else process.stderr.write(`facets: ${msg}\n`);
  };
  const request = (req: Record<string, unknown>) => {
    const stdin = serve?.stdin;
    if (stdin && !stdin.destroyed && stdin.writable) stdin.write(JSON.stringify(req) + "\n");
  };
  // call sends a request that facets serve answers with a "result" event
  // carrying the same id.
  const call = (req: Record<string, unknown>) =>
    new Promise<BridgeEvent>((resolve) => {
      const id = nextId++;
      if (!serve) {
        resolve({ type: "result", error: "the facets bridge is not running" });
        return;
      }
      pending.set(id, resolve);
      request({ ...req, id });
    });
  const failPending = (error: string) => {
    for (const [, resolve] of pending) resolve({ type: "result", error });
    pending.clear();
  };

  // failStart ends a Pi whose start failed the way Pi ends one started with
  // a bad --model: the error on stderr and exit status 1, in every mode.
  // Pi reports its own startup errors before any mode runs; an extension
  // runs inside the mode, so it asks for the shutdown (the TUI and RPC quit
  // at once; print mode ends after its prompt, which the input handler
  // blocks) and sets the status on exit, after the modes' own
  // process.exit(0) and after the TUI has restored the terminal.
  let fatal: string | undefined;
  function failStart(ctx: ExtensionContext, msg: string) {
    fatal = `Cannot start agent: ${msg}`;
    const text = fatal;
    if (ctx.mode === "rpc") ctx.ui.notify(text, "error");
    process.exitCode = 1;
    process.once("exit", () => {
      process.stderr.write(`facets: ${text}\n`);
      process.exitCode = 1;
    });
    ctx.shutdown();
  }

  // Deliveries are handed to Pi one at a time. pi.sendUserMessage returns
  // before Pi has decided what to do with the text: while Pi is idle, two
  // submissions in that window would both start a run, and the second
  // fails ("Agent is already processing a prompt") and resets the live
  // run's prompt sections. So the next one waits until Pi owns the one
  // before: queued as a follow-up (it passed our input handler while Pi
  // was busy) or recorded as the user message that started a run.
  let handing: string | undefined;
  const waiting: string[] = [];
  let handTimer: ReturnType<typeof setTimeout> | undefined;
  // Handed to a busy Pi since the last settle: past our input handler but
  // perhaps not yet in Pi's queue (other handlers run first), so a settle
  // in that gap must not take it for dropped.
  const justHanded = new Set<string>();
  // A delivery's identity is its header line (run, message, direction).
  const deliveryId = (text: string) => {
    const nl = text.indexOf("\n");
    return nl < 0 ? text : text.slice(0, nl);
  };
  const isHanding = (text: string) => handing !== undefined && deliveryId(handing) === deliveryId(text);

  function deliver(text: string) {
    // A delivery is submitted at most once while it is in flight, whatever
    // mix of wakes and rescans offered it again.
    const id = deliveryId(text);
    if ([...inflight()].some((t) => deliveryId(t) === id)) return;
    if (!ctxRef?.model) {
      // Left in the inbox: the next scan offers it again once a model is selected.
      request({ op: "release", text });
      if (!noModelReported) report("Cannot deliver talk: the receiving Pi has no selected model.");
      noModelReported = true;
      return;
    }
    inflight().add(text);
    if (handing !== undefined) waiting.push(text);
    else hand(text);
  }
  function hand(text: string) {
    handing = text;
    armHandTimer();
    try {
      pi.sendUserMessage(text, { deliverAs: "followUp", expandPromptTemplates: false });
      noModelReported = false;
    } catch (err) {
      dropHanding(`Facets delivery failed: ${String(err)}`);
    }
  }
  // handed: Pi owns the delivery being handed; hand the next.
  function handed() {
    handing = undefined;
    if (handTimer) clearTimeout(handTimer);
    handTimer = undefined;
    const next = waiting.shift();
    if (next !== undefined) hand(next);
  }
  // dropHanding gives the delivery back to the inbox: Pi refused it (its
  // error went to Pi's own error display), so a later scan retries it.
  function dropHanding(msg: string) {
    const text = handing;
    if (text === undefined) return;
    inflight().delete(text);
    request({ op: "release", text });
    report(msg);
    handed();
  }
  // A submission Pi neither queued nor started within 15 s while idle
  // most likely failed in its preflight (no credentials, say); it may also
  // still be on its way, so it is not released: it stays in flight, and the
  // next settle without its receipt gives it back to the inbox. The queue
  // goes on.
  function armHandTimer() {
    if (handTimer) clearTimeout(handTimer);
    handTimer = setTimeout(() => {
      handTimer = undefined;
      if (handing === undefined) return;
      if (ctxRef && ctxRef.isIdle() && !ctxRef.hasPendingMessages()) handed();
      else armHandTimer();
    }, 15_000);
    handTimer.unref?.();
  }

  function onEvent(e: BridgeEvent) {
    switch (e.type) {
      case "delivery":
        deliver(e.text ?? "");
        break;
      case "result":
        if (e.id !== undefined) {
          pending.get(e.id)?.(e);
          pending.delete(e.id);
        }
        break;
      case "problem":
        report(`Facets channel error: ${e.error}`);
        break;
      case "interrupt":
        if (ctxRef && !ctxRef.isIdle()) ctxRef.abort();
        break;
      case "close":
        ctxRef?.abort();
        ctxRef?.shutdown();
        break;
    }
  }

  function startServe(ctx: ExtensionContext) {
    const args = ["pi-extension", "serve", "--role", isSub ? "sub" : "main", "--protocol", String(PROTOCOL)];
    if (!isSub) args.push("--main-session", ctx.sessionManager.getSessionId());
    let child: ChildProcess;
    try {
      child = spawn(FACETS, args, { stdio: ["pipe", "pipe", "pipe"] });
    } catch (err) {
      report(`Cannot start facets serve: ${String(err)}`);
      return;
    }
    // Every stream of the child gets an error handler: an unhandled one
    // (EPIPE when facets serve has died) would crash Pi.
    child.on("error", (err) => report(`Cannot start facets serve: ${String(err)}`));
    child.stdin?.on("error", () => {});
    child.stdout?.on("error", (err) => report(`facets serve output: ${String(err)}`));
    child.stderr?.on("error", () => {});
    child.stderr?.on("data", (d) => report(String(d).trim()));
    child.on("exit", (code, signal) => {
      if (serve !== child) return; // shut down by us
      serve = undefined;
      failPending("the facets bridge stopped");
      report(`facets serve stopped (${signal ?? `exit status ${code}`}); channel deliveries stop until Pi restarts.`);
    });
    // readline also splits on U+2028/U+2029, which is safe here only
    // because Go's JSON encoder always escapes both.
    if (child.stdout)
      createInterface({ input: child.stdout }).on("line", (line) => {
        try {
          onEvent(JSON.parse(line) as BridgeEvent);
        } catch (err) {
          report(`bad facets serve output: ${String(err)}`);
        }
      });
    serve = child;
    // Receipts already in the session suppress redelivery after a restart.
    for (const entry of ctx.sessionManager.getEntries() as SessionEntry[]) {
      const text = entry.type === "message" ? textOf(entry.message) : undefined;
      if (text?.startsWith(DELIVERY_PREFIX)) request({ op: "receipt", text });
    }
    for (const text of inflight()) request({ op: "inflight", text });
    const file = ctx.sessionManager.getSessionFile();
    // A Main without a session file (pi --no-session) can never be resumed
    // once it exits; facets gc reads that from the Main's presence file.
    if (isSub ? file : true) request({ op: "session", sessionId: ctx.sessionManager.getSessionId(), ...(file ? { sessionFile: file } : {}) });
    request({ op: "ready" });
  }

  const isMCP = (t: ToolInfo) => t.sourceInfo?.path === "builtin:mcp";
  async function applyProfile(ctx: ExtensionContext, p: NonNullable<Plan["profile"]>) {
    const all = pi.getAllTools();
    const missing = p.tools.filter((t) => !all.some((x) => x.name === t && x.exposure !== "hidden"));
    if (missing.length) throw new Error(`Profile '${p.name}' references unknown tools: ${missing.join(", ")}.`);
    if (p.provider && p.modelId) {
      const model = ctx.modelRegistry.find(p.provider, p.modelId);
      if (!model) throw new Error(`Profile '${p.name}' model '${p.provider}/${p.modelId}' is unavailable.`);
      if (!(await pi.setModel(model))) throw new Error(`Profile '${p.name}' model '${p.provider}/${p.modelId}' has no usable credentials.`);
    }
    if (p.thinkingLevel) {
      // Pi validates the level; the profile passes it through unchanged.
      pi.setThinkingLevel(p.thinkingLevel as ThinkingLevel);
      if (pi.getThinkingLevel() !== p.thinkingLevel && !p.thinkingDefault)
        report(`Profile '${p.name}' thinking level '${p.thinkingLevel}' became '${pi.getThinkingLevel()}' for this model.`, "warning");
    }
    // Direct MCP tools stay as Pi's own configuration made them. codemode
    // and tool_search are not kept: the active set is exactly the profile's
    // tools (plus talk in a Sub), even though a Sub's launch argv enables them.
    const mcp = pi.getActiveTools().filter((t) => all.some((x) => x.name === t && isMCP(x)));
    pi.setActiveTools([...p.tools, ...mcp]);
    const missingActive = p.tools.filter((t) => !pi.getActiveTools().includes(t));
    if (missingActive.length) throw new Error(`Profile '${p.name}' could not activate tools: ${missingActive.join(", ")}.`);
  }

  // runFacets runs a runtime command with --format json and turns its
  // {"ok","text",...} answer into a tool result or a thrown error.
  async function runFacets(args: string[], input?: string, signal?: AbortSignal, closes = false): Promise<RunnerAnswer> {
    const r = await run([...args, "--format", "json", "--main-session", mainSession()], { cwd: ctxRef?.cwd, input, signal });
    let out: RunnerAnswer;
    try {
      out = JSON.parse(r.stdout) as RunnerAnswer;
    } catch {
      throw new Error(r.stderr.trim() || `facets ${args[0]} exited with status ${r.code}`);
    }
    if (!out.ok) throw new Error(out.error ?? `facets ${args[0]} failed`);
    if (!serve && ctxRef && plan && !startError) startServe(ctxRef);
    request({ op: "scan", ...(closes && typeof out.runId === "string" ? { closed: out.runId } : {}) });
    return out;
  }
  // launchArgs are the Main facts a launch needs: the bridge for the Sub,
  // the Main's cwd, its trust and role packs for the compile, and where each
  // of its tools comes from (facets picks the extensions a Sub must load).
  const launchArgs = () => ["--bridge", SELF, "--main-cwd", ctxRef?.cwd ?? ".", trusted ? "--trust" : "--no-trust",
    ...rolePacks.flatMap((p) => ["--role-pack", p]),
    ...pi.getAllTools().flatMap((t) => ["--tool-source",
      JSON.stringify({ name: t.name, path: t.sourceInfo?.path ?? "", source: t.sourceInfo?.source ?? "" })])];

  // registerTools registers the plan's tools once per extension instance.
  // Names, descriptions and schemas come from Go; this only executes them.
  function registerTools(tools: PlanTool[]) {
    for (const t of tools) {
      if (registeredTools.has(t.name)) continue;
      registeredTools.add(t.name);
      pi.registerTool({
        name: t.name,
        label: t.name,
        description: t.description,
        parameters: t.parameters,
        exposure: t.exposure,
        executionMode: t.executionMode,
        async execute(_id: string, params: Params, signal: AbortSignal | undefined) {
          const input = t.input !== undefined ? String(params[t.input] ?? "") : undefined;
          if (t.serve) {
            const r = await call({ op: t.serve, text: input });
            if (r.error) throw new Error(r.error);
            return { content: [{ type: "text" as const, text: r.text ?? "" }], details: { messageId: r.messageId }, terminate: t.terminate };
          }
          const { ok: _ok, text, ...details } = await runFacets(toolArgs(t, params, launchArgs), input, signal, t.closes);
          return { content: [{ type: "text" as const, text: text ?? "" }], details, terminate: t.terminate };
        },
      });
    }
  }

  const mainSession = () => ctxRef?.sessionManager.getSessionId() ?? "";

  // The plan is started here, when Pi loads the extension, not at
  // session_start: most of its cost is the facets process starting, which
  // then overlaps the rest of Pi's startup. It waits for its request
  // (PlanRequest in Go) on stdin, which session_start writes; until then
  // it does not keep Pi alive (a Pi that never starts a session exits, and
  // the plan with it).
  //
  // With a plan daemon running (started by an earlier plan), the extension
  // connects to it instead and sends it the same call: no process at all.
  const planArgs = ["pi-extension", "plan", "--role", isSub ? "sub" : "main", "--protocol", String(PROTOCOL), "--extension-version", EXT_VERSION];
  const spawnPlan = (cwd?: string) => start(planArgs, { cwd, env: PLAN_SOCKET ? { ...process.env, FACETS_PLAN_SOCKET: PLAN_SOCKET } : undefined });
  let earlyPlan: Promise<{ daemon?: Daemon; proc?: Proc }> | undefined = tooOld ? undefined : connectDaemon().then((daemon) => {
    if (daemon) return { daemon };
    const proc = spawnPlan();
    proc.hold(false);
    return { proc };
  });

  if (!isSub) {
    pi.registerFlag("profile", { description: "Start with a Facets profile (model, thinking, tools, skills, instructions)", type: "string" });
    pi.registerCommand("profiles", {
      description: "List Facets profiles with their invocation mode and diagnostics",
      handler: async (_args, ctx) => {
        const p = plan?.profiles ?? { text: startError ?? "Facets is not loaded.", level: "warning" as const };
        if (ctx.hasUI) ctx.ui.notify(p.text, p.level);
        else process.stdout.write(p.text + "\n");
      },
    });
  }

  pi.on("session_start", async (event, ctx) => {
    ctxRef = ctx;
    startError = undefined;
    // Role packs register synchronously on the shared bus; the compiler
    // reads them. Trust is decided by facets (profiles.DecideTrust) from
    // Pi's answer and flag; the plan says what it decided.
    const packs: string[] = [];
    pi.events.emit(ROLE_DISCOVERY, { apiVersion: 1, register: (p: unknown) => typeof p === "string" && packs.push(p) });
    rolePacks = packs;
    trusted = false;
    const flag = isSub ? undefined : pi.getFlag("profile");
    const profile = typeof flag === "string" ? flag : undefined;
    // askPlan asks facets for the plan, and returns why Facets must stay
    // off when the binary and the extension do not match.
    const askPlan = async (): Promise<string | undefined> => {
      const planRequest = { cwd: ctx.cwd, approve: piApprove(), piTrusted: ctx.isProjectTrusted(), rolePacks: packs, profile, mainSession: isSub ? undefined : ctx.sessionManager.getSessionId() };
      // The first session of this extension instance uses the daemon
      // connection or the plan started at load; a later one (a session
      // switch) asks the daemon again, or spawns its own plan.
      const early = earlyPlan ? await earlyPlan : { daemon: await connectDaemon() };
      earlyPlan = undefined;
      const input = JSON.stringify(planRequest);
      let r = early.daemon ? await early.daemon.ask(planArgs, input, processDir() ?? ctx.cwd) : undefined;
      if (!r) {
        const proc = early.proc ?? spawnPlan(ctx.cwd);
        proc.hold(true);
        proc.finish(input);
        r = await proc.result;
      }
      try {
        plan = JSON.parse(r.stdout) as Plan;
      } catch {
        plan = undefined;
        startError = r.stderr.trim() || `facets pi-extension plan exited with status ${r.code}`;
      }
      // The handshake: a binary that knows it says whether the protocols
      // match (mismatch); an older one rejects --protocol or, if it took the
      // flag some other way, answers without a protocol.
      let mismatch = plan?.mismatch;
      if (!mismatch && ((!plan && /unknown flag: --protocol/.test(r.stderr)) || (plan && plan.protocol !== PROTOCOL)))
        mismatch = await olderBinary();
      // A binary that is gone (facets moved or uninstalled, the extension
      // left behind) is treated as a skew: plain Pi must stay usable.
      if (!mismatch && r.unstartable)
        mismatch = `The facets Pi extension cannot start facets (${r.stderr.trim()}). Run \`${FIX}\` with the facets you want Pi to use and restart Pi, or remove the facets extension to use Pi without Facets.`;
      return mismatch;
    };
    // An older Pi than facets supports gets no plan at all: the extension
    // may use what that Pi lacks.
    const mismatch = tooOld ?? (await askPlan());
    if (mismatch) {
      plan = { role: isSub ? "sub" : "main", sections: {}, profiles: { text: mismatch, level: "warning" } };
      for (const k of ["facets_profiles", "facets_main", "facets_profile"]) plan.sections[k] = "";
      if (isSub || profile) startError = mismatch;
      else {
        // Plain Pi runs on without Facets; the warning shows once per Pi.
        startError = undefined;
        if (!mismatchWarned) report(mismatch, "warning");
        mismatchWarned = true;
        return;
      }
    }
    trusted = plan?.trusted === true;
    if (plan?.error) startError = plan.error;
    for (const w of plan?.warnings ?? []) report(w, "warning");
    registerTools(plan?.tools ?? []);
    if (plan?.profile && !startError) {
      try {
        await applyProfile(ctx, plan.profile);
        if (ctx.hasUI) {
          if (isSub) ctx.ui.setStatus("facets", `sub · ${plan.profile.name}`);
          else ctx.ui.setStatus("facets-profile", `profile:${plan.profile.name}`);
        }
      } catch (err) {
        startError = (err as Error).message;
      }
    }
    if (!startError) {
      // A Main without runs starts facets serve with its first runtime
      // command (runFacets): one process fewer for a Pi that never delegates.
      if (isSub || plan?.serve) startServe(ctx);
      // A surface that types nothing into the Sub (tmux) leaves its task
      // to the Sub: the first user message, as if typed, once per Pi.
      if (isSub && plan?.selfStart && plan.task && !kickedOff && event.reason === "startup") {
        kickedOff = true;
        pi.sendUserMessage(plan.task, { expandPromptTemplates: false });
      }
      return;
    }
    if (isSub) {
      // A Sub that cannot start tells its Main, which would otherwise wait
      // for it forever, and quits.
      const r = await run(["channel", "send", "--direction", "to-main"], { input: `Unable to initialize Sub profile: ${startError}` });
      if (r.code !== 0) report(r.stderr.trim() || `facets channel send exited with status ${r.code}`);
    }
    // A failure at startup ends Pi; after a /reload or a session switch the
    // session stays open and every input is blocked with the error instead.
    if (isSub || event.reason === "startup") failStart(ctx, startError);
    else report(`Cannot start agent: ${startError}`);
  });

  pi.on("resources_discover", async () => {
    for (const c of plan?.commands ?? []) {
      if (registered.has(c.name)) continue;
      if (pi.getCommands().some((x) => x.name === c.name)) {
        report(`Cannot register /${c.name}: another command already uses that name.`, "warning");
        continue;
      }
      registered.add(c.name);
      pi.registerCommand(c.name, {
        description: c.description,
        handler: async (args) => {
          // The runtime binds, reuses or resumes this Main's Sub of the
          // profile and wraps the task; nothing is added to Main's conversation.
          try {
            const out = await runFacets(["invoke", ...launchArgs(), "--profile", c.profile, ...(args.trim() ? ["--task", args.trim()] : [])]);
            report(out.text ?? "", "info");
          } catch (err) {
            report((err as Error).message);
          }
        },
      });
    }
    return { skillPaths: plan?.profile?.skills ?? [] };
  });

  // herdr types only plan.kickoff into a new Sub; the task itself stays in
  // the channel manifest, off every command line, and replaces it here.
  let kickedOff = false;
  pi.on("input", async (event) => {
    if (startError) {
      // A failed start prints its error once, on exit.
      if (!fatal) report(`Cannot start agent: ${startError}`);
      return { action: "handled" as const };
    }
    // Pi is busy, so the delivery being handed joins its follow-up queue.
    if (event.source === "extension" && event.streamingBehavior && isHanding(event.text)) {
      justHanded.add(handing!);
      handed();
    }
    if (isSub && !kickedOff && plan?.kickoff && plan.task && event.text.trim() === plan.kickoff) {
      kickedOff = true;
      return { action: "transform" as const, text: plan.task };
    }
    return { action: "continue" as const };
  });

  pi.on("before_agent_start", async (event) => {
    const sections = (event.systemPromptOptions.sections ??= {});
    for (const [k, v] of Object.entries(plan?.sections ?? {})) {
      if (v) sections[k] = v;
      else delete sections[k];
    }
  });

  pi.on("message_end", async (event) => {
    const text = textOf(event.message);
    if (!text?.startsWith(DELIVERY_PREFIX)) return;
    inflight().delete(text);
    request({ op: "receipt", text });
  });
  // A Sub's turn id changes with each user input of a run (the first one
  // and every follow-up), so a late interrupt_sub cannot cancel later work.
  let userInputs = 0;
  pi.on("agent_start", async () => {
    userInputs = 0;
    if (isSub) request({ op: "turn-start" });
  });
  pi.on("message_start", async (event) => {
    if (event.message.role !== "user") return;
    if (isSub && ++userInputs > 1) request({ op: "turn-start" });
    const text = textOf(event.message);
    if (text !== undefined && isHanding(text)) handed();
  });
  pi.on("agent_settled", async (event, ctx) => {
    if (isSub) request({ op: "turn-end" });
    if (ctx.hasPendingMessages()) return;
    // Deliveries still on their way to Pi are not lost; the settle of the
    // run they start retries whatever was.
    if (handing !== undefined || waiting.length > 0) return;
    // What Pi still has not recorded was dropped (a follow-up withdrawn
    // with its run): back to the inbox. An abort keeps the marks because
    // Pi may still hold its queue.
    if (!event.aborted) {
      for (const text of inflight()) {
        if (justHanded.has(text)) continue; // the next settle decides
        request({ op: "release", text });
        inflight().delete(text);
      }
    }
    justHanded.clear();
    request({ op: "settled", aborted: event.aborted });
  });
  pi.on("session_shutdown", async (event) => {
    const early = earlyPlan;
    earlyPlan = undefined;
    void early?.then((e) => (e.proc?.finish(), e.daemon?.close()));
    if (isSub && event.reason === "quit") request({ op: "quit" });
    // Waiting deliveries were never handed to Pi: the next bridge must
    // not take them for Pi's (the inflight set outlives this instance).
    for (const t of waiting) inflight().delete(t);
    waiting.length = 0;
    if (handTimer) clearTimeout(handTimer);
    handTimer = undefined;
    const child = serve;
    serve = undefined;
    child?.stdin?.end();
    failPending("facets bridge shut down");
  });
}
