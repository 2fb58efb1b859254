// Renders every chat template with @huggingface/jinja for a fixed set of conversations and
// prints the cases (template source, context, expected output or error) as JSON on stdout.
// usage: node chat_reference.mjs TEMPLATES_DIR
import fs from "node:fs";
import path from "node:path";
import { Template } from "@huggingface/jinja";
import { MODELS, loadModel } from "./models.mjs";

const templatesDir = process.argv[2];
if (!templatesDir) {
  console.error("usage: node chat_reference.mjs TEMPLATES_DIR");
  process.exit(2);
}

const tokenText = (t) => (t == null ? "" : typeof t === "string" ? t : t.content ?? "");

const families = [];
for (const model of MODELS) {
  const m = loadModel(model);
  let tpl = m.tokenizerConfig.chat_template;
  if (Array.isArray(tpl)) tpl = (tpl.find((t) => t.name === "default") || {}).template;
  if (typeof tpl !== "string") continue;
  families.push({
    name: model.name,
    template: tpl,
    bos_token: tokenText(m.tokenizerConfig.bos_token),
    eos_token: tokenText(m.tokenizerConfig.eos_token),
  });
}
for (const file of fs.readdirSync(templatesDir).sort()) {
  if (!file.endsWith(".jinja")) continue;
  families.push({
    name: path.basename(file, ".jinja"),
    template: fs.readFileSync(path.join(templatesDir, file), "utf8"),
    bos_token: "<s>",
    eos_token: "</s>",
  });
}

const conversations = {
  single_user: [{ role: "user", content: "Hello, how are you?" }],
  system_user: [
    { role: "system", content: "You are a concise assistant." },
    { role: "user", content: "  Summarize: naïve café — 日本語 😀  " },
  ],
  multi_turn: [
    { role: "user", content: "What is 2+2?" },
    { role: "assistant", content: "2+2 = 4." },
    { role: "user", content: "And times 3?\nShow the steps." },
  ],
  system_multi_turn: [
    { role: "system", content: "Answer in French." },
    { role: "user", content: "Hi!" },
    { role: "assistant", content: "Bonjour !" },
    { role: "user", content: "How are you?" },
  ],
  assistant_thinking: [
    { role: "user", content: "Think first." },
    { role: "assistant", content: "<think>\nThe user wants thought.\n</think>\n\nDone thinking." },
    { role: "user", content: "Again?" },
  ],
  bad_alternation: [
    { role: "user", content: "one" },
    { role: "user", content: "two" },
  ],
};

const cases = [];
for (const fam of families) {
  const template = new Template(fam.template);
  for (const [convName, messages] of Object.entries(conversations)) {
    for (const add_generation_prompt of [false, true]) {
      const context = { messages, add_generation_prompt, bos_token: fam.bos_token, eos_token: fam.eos_token };
      let expected = null;
      let error = null;
      try {
        expected = template.render(context);
      } catch (e) {
        error = String(e.message || e);
      }
      cases.push({ family: fam.name, conversation: convName, template: fam.template, context, expected, error });
    }
  }
}
process.stdout.write(JSON.stringify({ cases }));
