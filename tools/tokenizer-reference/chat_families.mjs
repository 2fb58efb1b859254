// usage: node chat_families.mjs DIR
// The model families' chat templates (DIR/families.json) rendered by @huggingface/jinja over
// conversations with and without a system message, multi-turn, tools with assistant tool calls
// and tool results, documents, and thinking on and off; each with and without the generation
// prompt. strftime_now() formats a fixed date so the outputs do not depend on the day. Prints
// the cases (family, conversation, template, context, expected output or error) as JSON.
import fs from "node:fs";
import path from "node:path";
import { Template } from "@huggingface/jinja";
import { MODELS, loadModel } from "./models.mjs";

const tokenText = (t) => (t == null ? "" : typeof t === "string" ? t : t.content ?? "");

// The reference's strftime_now() formats `new Date()`: a fixed date instead, 26 Jul 2024 00:00
// local time (the C++ test gives strftime_now the same time).
const RealDate = Date;
globalThis.Date = class extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(2024, 6, 26, 0, 0, 0);
    else super(...args);
  }
};

const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a city.",
    parameters: {
      type: "object",
      properties: {
        city: { type: "string", description: "The city, e.g. Paris" },
        unit: { type: "string", enum: ["celsius", "fahrenheit"], description: "Temperature unit" },
      },
      required: ["city"],
    },
  },
};
const timeTool = {
  type: "function",
  function: {
    name: "get_time",
    description: "Current time in a timezone.",
    parameters: { type: "object", properties: { tz: { type: "string" } }, required: ["tz"] },
  },
};
const toolCall = { id: "call12345", type: "function", function: { name: "get_weather", arguments: { city: "Paris" } } };

const conversations = {
  single_user: { messages: [{ role: "user", content: "Hello, how are you?" }] },
  system_user: {
    messages: [
      { role: "system", content: "You are a concise assistant." },
      { role: "user", content: "  Summarize: naïve café — 日本語 😀  " },
    ],
  },
  multi_turn: {
    messages: [
      { role: "user", content: "What is 2+2?" },
      { role: "assistant", content: "2+2 = 4." },
      { role: "user", content: "And times 3?\\nShow the steps." },
    ],
  },
  system_multi_turn: {
    messages: [
      { role: "system", content: "Answer in French." },
      { role: "user", content: "Hi!" },
      { role: "assistant", content: "Bonjour !" },
      { role: "user", content: "How are you?" },
    ],
  },
  tools: {
    messages: [{ role: "user", content: "What's the weather in Paris?" }],
    tools: [weatherTool, timeTool],
  },
  system_tools: {
    messages: [
      { role: "system", content: "You can call tools." },
      { role: "user", content: "What's the weather in Paris?" },
    ],
    tools: [weatherTool],
  },
  tool_round_trip: {
    messages: [
      { role: "user", content: "What's the weather in Paris?" },
      { role: "assistant", content: null, tool_calls: [toolCall] },
      { role: "tool", tool_call_id: "call12345", name: "get_weather", content: '{"temp_c": 18, "sky": "cloudy"}' },
    ],
    tools: [weatherTool],
  },
  tool_round_trip_answer: {
    messages: [
      { role: "user", content: "What's the weather in Paris?" },
      { role: "assistant", content: "", tool_calls: [toolCall] },
      { role: "tool", tool_call_id: "call12345", name: "get_weather", content: '{"temp_c": 18, "sky": "cloudy"}' },
      { role: "assistant", content: "It is 18 °C and cloudy in Paris." },
      { role: "user", content: "Thanks!" },
    ],
    tools: [weatherTool],
  },
  documents: {
    messages: [{ role: "user", content: "What does the report say?" }],
    documents: [
      { title: "Report", text: "Sales grew 12% in Q3." },
      { title: "Memo", text: "The office moves in May." },
    ],
  },
  thinking_on: {
    messages: [
      { role: "user", content: "Think first." },
      { role: "assistant", content: "<think>\\nThe user wants thought.\\n</think>\\n\\nDone thinking." },
      { role: "user", content: "Again?" },
    ],
    enable_thinking: true,
  },
  thinking_off: {
    messages: [
      { role: "user", content: "Think first." },
      { role: "assistant", content: "<think>\\nThe user wants thought.\\n</think>\\n\\nDone thinking." },
      { role: "user", content: "Again?" },
    ],
    enable_thinking: false,
  },
};

function loadFamilies(dir) {
  const manifest = JSON.parse(fs.readFileSync(path.join(dir, "families.json"), "utf8"));
  const families = [];
  for (const [key, info] of Object.entries(manifest)) {
    if (key.startsWith("npm:")) {
      const model = MODELS.find((m) => m.name === key.slice(4));
      if (!model) throw new Error(`families.json: no reference package for ${key}`);
      const config = loadModel(model).tokenizerConfig;
      let template = config.chat_template;
      if (Array.isArray(template)) template = (template.find((t) => t.name === "default") || {}).template;
      families.push({ name: key.slice(4), family: info.family, template, bos_token: tokenText(config.bos_token),
        eos_token: tokenText(config.eos_token) });
    } else {
      families.push({ name: key, family: info.family, template: fs.readFileSync(path.join(dir, key + ".jinja"), "utf8"),
        bos_token: info.bos_token, eos_token: info.eos_token });
    }
  }
  return families;
}

function renderFamilies(dir) {
  const cases = [];
  for (const fam of loadFamilies(dir)) {
    const template = new Template(fam.template);
    for (const [convName, conv] of Object.entries(conversations)) {
      for (const add_generation_prompt of [false, true]) {
        const context = { ...conv, add_generation_prompt, bos_token: fam.bos_token, eos_token: fam.eos_token };
        let expected = null;
        let error = null;
        try {
          expected = template.render(context);
        } catch (e) {
          error = String(e.message || e);
        }
        cases.push({ name: fam.name, family: fam.family, conversation: convName, template: fam.template, context,
          expected, error });
      }
    }
  }
  return cases;
}

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node chat_families.mjs DIR");
  process.exit(2);
}
process.stdout.write(JSON.stringify({ cases: renderFamilies(dir) }));
