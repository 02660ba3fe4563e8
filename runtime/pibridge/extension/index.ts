// facets bridge for Pi. Written by `facets pi-extension install`; the source
// of truth is runtime/pibridge/extension/index.ts in the facets repository.
//
// This file only maps Pi's extension API onto the facets binary. Profiles,
// prompt sections and the channel protocol are decided in Go:
//   facets pi-extension plan   -> what to apply at startup (JSON)
//   facets pi-extension serve  -> channel deliveries, receipts and Sub talk
//   facets delegate|talk|interrupt|close|list -> the Main's tools
//   facets invoke -> /sub:<profile>
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

const SELF = fileURLToPath(import.meta.url);
const DELIVERY_PREFIX = "[Facets delivery v1] ";
const ROLE_DISCOVERY = "pi-herdr-subagents:roles:discover:v1";

type Plan = {
  role: "main" | "sub";
  sections: Record<string, string>;
  profile?: { name: string; provider?: string; modelId?: string; thinkingLevel?: string; tools: string[]; skills: string[] };
  commands?: { name: string; profile: string; description: string }[];
  profiles: { text: string; level: "info" | "warning" };
  error?: string;
  kickoff?: string;
  task?: string;
  warnings?: string[];
};
type Result = { code: number; stdout: string; stderr: string };
type BridgeEvent = { type: string; id?: number; runId?: string; messageId?: string; text?: string; error?: string; reason?: string };

// FACETS is the facets binary to run, read once: $FACETS_BIN, else the one
// facets-bridge.json beside this file records, else "facets" from PATH.
const FACETS = facetsBin();
function facetsBin(): string {
  if (process.env.FACETS_BIN) return process.env.FACETS_BIN;
  try {
    const conf = JSON.parse(readFileSync(join(dirname(SELF), "facets-bridge.json"), "utf8"));
    if (typeof conf.facetsBin === "string" && conf.facetsBin) return conf.facetsBin;
  } catch {
    // no config beside the extension: use PATH
  }
  return "facets";
}

// run executes facets with args; input, when given, is written to stdin so
// large or secret values never travel on a command line.
function run(args: string[], opts: { cwd?: string; input?: string; signal?: AbortSignal } = {}): Promise<Result> {
  return new Promise((resolve) => {
    const child = spawn(FACETS, args, { cwd: opts.cwd, stdio: ["pipe", "pipe", "pipe"], signal: opts.signal });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (err) => resolve({ code: -1, stdout, stderr: stderr + String(err) }));
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? "");
  });
}

function textOf(message: any): string | undefined {
  if (!message || message.role !== "user") return undefined;
  const c = message.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c) && c[0]?.type === "text") return c[0].text;
  return undefined;
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
  let trusted = false;
  let rolePacks: string[] = [];
  let noModelReported = false;
  // Deliveries handed to Pi but not yet recorded, per session. Pi may keep
  // its follow-up queue across /reload, so this lives on globalThis and the
  // next bridge instance tells facets serve not to offer them again.
  const inflightBySession: Map<string, Set<string>> = ((globalThis as any)[Symbol.for("facets.bridge.inflight.v1")] ??= new Map());
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
  const request = (req: Record<string, unknown>) => serve?.stdin?.write(JSON.stringify(req) + "\n");
  // call sends a request that facets serve answers with a "result" event
  // carrying the same id.
  const call = (req: Record<string, unknown>) =>
    new Promise<BridgeEvent>((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      if (!serve) resolve({ type: "result", error: "the facets bridge is not running" });
      else request({ ...req, id });
    });

  function onEvent(e: BridgeEvent) {
    switch (e.type) {
      case "delivery":
        if (!ctxRef?.model) {
          // Left in the inbox: the next scan offers it again once a model is selected.
          request({ op: "release", text: e.text });
          if (!noModelReported) report("Cannot deliver talk: the receiving Pi has no selected model.");
          noModelReported = true;
          break;
        }
        try {
          inflight().add(e.text!);
          pi.sendUserMessage(e.text!, { deliverAs: "followUp", expandPromptTemplates: false });
          noModelReported = false;
        } catch (err) {
          inflight().delete(e.text!);
          request({ op: "release", text: e.text });
          report(`Facets delivery failed: ${String(err)}`);
        }
        break;
      case "result":
        pending.get(e.id!)?.(e);
        pending.delete(e.id!);
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
    const args = ["pi-extension", "serve", "--role", isSub ? "sub" : "main"];
    if (!isSub) args.push("--main-session", ctx.sessionManager.getSessionId());
    const child = spawn(FACETS, args, { stdio: ["pipe", "pipe", "pipe"] });
    child.on("error", (err) => report(`Cannot start facets serve: ${String(err)}`));
    child.stderr?.on("data", (d) => report(String(d).trim()));
    // readline also splits on U+2028/U+2029, which is safe here only
    // because Go's JSON encoder always escapes both.
    createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        onEvent(JSON.parse(line));
      } catch (err) {
        report(`bad facets serve output: ${String(err)}`);
      }
    });
    child.stdin?.on("error", () => {});
    serve = child;
    // Receipts already in the session suppress redelivery after a restart.
    for (const entry of ctx.sessionManager.getEntries() as any[]) {
      const text = entry.type === "message" ? textOf(entry.message) : undefined;
      if (text?.startsWith(DELIVERY_PREFIX)) request({ op: "receipt", text });
    }
    for (const text of inflight()) request({ op: "inflight", text });
    const file = ctx.sessionManager.getSessionFile();
    if (isSub && file) request({ op: "session", sessionId: ctx.sessionManager.getSessionId(), sessionFile: file });
    request({ op: "ready" });
  }

  async function applyProfile(ctx: ExtensionContext, p: NonNullable<Plan["profile"]>) {
    const all = pi.getAllTools();
    const missing = p.tools.filter((t) => !all.some((x: any) => x.name === t && x.exposure !== "hidden"));
    if (missing.length) throw new Error(`Profile '${p.name}' references unknown tools: ${missing.join(", ")}.`);
    if (p.provider && p.modelId) {
      const model = ctx.modelRegistry.find(p.provider, p.modelId);
      if (!model) throw new Error(`Profile '${p.name}' model '${p.provider}/${p.modelId}' is unavailable.`);
      if (!(await pi.setModel(model))) throw new Error(`Profile '${p.name}' model '${p.provider}/${p.modelId}' has no usable credentials.`);
    }
    if (p.thinkingLevel) {
      pi.setThinkingLevel(p.thinkingLevel as any);
      if (pi.getThinkingLevel() !== p.thinkingLevel)
        report(`Profile '${p.name}' thinking level '${p.thinkingLevel}' became '${pi.getThinkingLevel()}' for this model.`, "warning");
    }
    // Direct MCP tools stay as Pi's own configuration made them. codemode
    // and tool_search are not kept: the active set is exactly the profile's
    // tools (plus talk in a Sub), even though a Sub's launch argv enables them.
    const mcp = pi.getActiveTools().filter((t) => all.some((x: any) => x.name === t && x.sourceInfo?.path === "builtin:mcp"));
    pi.setActiveTools([...p.tools, ...mcp]);
    const missingActive = p.tools.filter((t) => !pi.getActiveTools().includes(t));
    if (missingActive.length) throw new Error(`Profile '${p.name}' could not activate tools: ${missingActive.join(", ")}.`);
  }

  // runFacets runs a runtime command with --format json and turns its
  // {"ok","text",...} answer into a tool result or a thrown error.
  async function runFacets(args: string[], input?: string, signal?: AbortSignal) {
    const r = await run([...args, "--format", "json", "--main-session", mainSession()], { cwd: ctxRef?.cwd, input, signal });
    let out: any;
    try {
      out = JSON.parse(r.stdout);
    } catch {
      throw new Error(r.stderr.trim() || `facets ${args[0]} exited with status ${r.code}`);
    }
    if (!out.ok) throw new Error(out.error ?? `facets ${args[0]} failed`);
    request({ op: "scan" });
    return out;
  }
  // launchArgs are the Main facts a launch needs: the bridge for the Sub,
  // the Main's cwd, its trust and role packs for the compile, and where each
  // of its tools comes from (facets picks the extensions a Sub must load).
  const launchArgs = () => ["--bridge", SELF, "--main-cwd", ctxRef?.cwd ?? ".", trusted ? "--trust" : "--no-trust",
    ...rolePacks.flatMap((p) => ["--role-pack", p]),
    ...pi.getAllTools().flatMap((t: any) => ["--tool-source",
      JSON.stringify({ name: t.name, path: t.sourceInfo?.path ?? "", source: t.sourceInfo?.source ?? "" })])];

  function facetsTool(name: string, description: string, parameters: any, args: (params: any) => string[],
    opts: { input?: (params: any) => string; terminate?: boolean; [k: string]: unknown } = {}) {
    const { input, terminate, ...rest } = opts;
    pi.registerTool({
      name,
      label: name,
      description,
      parameters,
      ...rest,
      async execute(_id: string, params: any, signal: AbortSignal | undefined) {
        const out = await runFacets(args(params), input?.(params), signal);
        const { ok: _ok, text, ...details } = out;
        return { content: [{ type: "text", text }], details, terminate };
      },
    } as any);
  }

  const mainSession = () => ctxRef?.sessionManager.getSessionId() ?? "";
  if (isSub) {
    pi.registerTool({
      name: "talk",
      label: "talk",
      description: "Send one message to the Main Pi and end the current turn.",
      parameters: Type.Object({ message: Type.String({ description: "Message for the Main Pi" }) }),
      exposure: "model-only",
      executionMode: "sequential",
      async execute(_id, params) {
        const r = await call({ op: "send", text: params.message });
        if (r.error) throw new Error(r.error);
        return { content: [{ type: "text", text: "Message queued for the Main Pi." }], details: { messageId: r.messageId }, terminate: true };
      },
    } as any);
  } else {
    pi.registerFlag("profile", { description: "Start with a Facets profile (model, thinking, tools, skills, instructions)", type: "string" });
    facetsTool(
      "delegate",
      "Launch a fresh agent-invokable Sub Pi with a Facets profile, or resume a persistent one by session ID.",
      Type.Object({
        title: Type.String({ description: "Short title for the Sub's tab (at most 48 characters shown)" }),
        task: Type.String({ description: "Self-contained task for the Sub" }),
        profile: Type.String({ description: "Exact profile name from the Facets catalog" }),
        cwd: Type.Optional(Type.String({ description: "Working directory for the Sub" })),
        resumeSessionId: Type.Optional(Type.String({ description: "Persistent Sub session to resume" })),
      }),
      (p) => ["delegate", ...launchArgs(), "--profile", p.profile, "--title", p.title, "--task", p.task,
        ...(p.cwd ? ["--cwd", p.cwd] : []), ...(p.resumeSessionId ? ["--resume", p.resumeSessionId] : [])],
      { exposure: "model-only", terminate: true },
    );
    facetsTool("talk", "Queue one message to an open Sub.",
      Type.Object({ runId: Type.String(), message: Type.String() }),
      (p) => ["talk", "--run", p.runId], { input: (p) => p.message, executionMode: "sequential" });
    facetsTool("interrupt_sub", "Cancel the current turn of a Sub without closing it.",
      Type.Object({ runId: Type.String() }), (p) => ["interrupt", "--run", p.runId]);
    facetsTool("close_sub", "Stop a Sub's work if needed and close its session.",
      Type.Object({ runId: Type.String(), reason: Type.Optional(Type.String()) }),
      (p) => ["close", "--run", p.runId, ...(p.reason ? ["--reason", p.reason] : [])]);
    facetsTool("list_sub", "List open Subs with their live status, and resumable Sub sessions.",
      Type.Object({ all: Type.Optional(Type.Boolean()) }),
      (p) => ["list", ...(p.all ? ["--all"] : [])]);

    pi.registerCommand("profiles", {
      description: "List Facets profiles with their invocation mode and diagnostics",
      handler: async (_args, ctx) => {
        const p = plan?.profiles ?? { text: startError ?? "Facets is not loaded.", level: "warning" as const };
        if (ctx.hasUI) ctx.ui.notify(p.text, p.level);
        else process.stdout.write(p.text + "\n");
      },
    });
  }

  pi.on("session_start", async (_event, ctx) => {
    ctxRef = ctx;
    startError = undefined;
    // Role packs register synchronously on the shared bus; the compiler
    // reads them (facets has no trust logic of its own: Pi's decision is passed on).
    const packs: string[] = [];
    pi.events.emit(ROLE_DISCOVERY, { apiVersion: 1, register: (p: unknown) => typeof p === "string" && packs.push(p) });
    rolePacks = packs;
    trusted = ctx.isProjectTrusted();
    const args = ["pi-extension", "plan", "--role", isSub ? "sub" : "main", "-C", ctx.cwd, trusted ? "--trust" : "--no-trust"];
    for (const p of packs) args.push("--role-pack", p);
    const profile = isSub ? undefined : (pi.getFlag("profile") as string | undefined);
    if (profile) args.push("--profile", profile);
    const r = await run(args, { cwd: ctx.cwd });
    try {
      plan = JSON.parse(r.stdout) as Plan;
    } catch {
      plan = undefined;
      startError = r.stderr.trim() || `facets pi-extension plan exited with status ${r.code}`;
    }
    if (plan?.error) startError = plan.error;
    for (const w of plan?.warnings ?? []) report(w, "warning");
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
    // Without a UI (print/json mode) the input handler reports it instead.
    if (startError && ctx.hasUI) report(`Cannot start agent: ${startError}`);
    if (!startError) startServe(ctx);
    else if (isSub) {
      // A Sub that cannot start tells its Main, which would otherwise wait
      // for it forever, and quits.
      const r = await run(["channel", "send", "--direction", "to-main"], { input: `Unable to initialize Sub profile: ${startError}` });
      if (r.code !== 0) report(r.stderr.trim());
      ctx.shutdown();
    }
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
            report(out.text, "info");
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
      report(`Cannot start agent: ${startError}`);
      return { action: "handled" as const };
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
    if (isSub && (event.message as any).role === "user" && ++userInputs > 1) request({ op: "turn-start" });
  });
  pi.on("agent_settled", async (event, ctx) => {
    if (isSub) request({ op: "turn-end" });
    if (ctx.hasPendingMessages()) return;
    if (!event.aborted) inflight().clear();
    request({ op: "settled", aborted: event.aborted });
  });
  pi.on("session_shutdown", async (event) => {
    if (isSub && event.reason === "quit") request({ op: "quit" });
    serve?.stdin?.end();
    serve = undefined;
    for (const [, resolve] of pending) resolve({ type: "result", error: "facets bridge shut down" });
    pending.clear();
  });
}
