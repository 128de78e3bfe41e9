// The serving benchmark's user messages: requests that ask for long answers
// (so that a server without `ignore_eos` still generates up to max_tokens),
// each different after the chat template's shared start, so that prefix
// reuse saves the same few tokens on every server and no more.
const asks = [
  "Write a long story about a lighthouse keeper who finds a message in a bottle.",
  "Explain in detail how a steam engine works, step by step.",
  "Describe a walk through a busy market in a large city, with every sight and sound.",
  "Write a detailed guide to growing tomatoes in a small garden.",
  "Tell me the history of the bicycle, from the first designs to today.",
  "Write a long letter from a sailor to his family at home.",
  "Explain how the water cycle works and why it matters for farming.",
  "Describe, in detail, how to bake a loaf of bread from flour, water, salt and yeast.",
  "Write a story about a robot who learns to paint.",
  "Explain the rules of chess to a beginner, piece by piece.",
  "Describe the four seasons in a mountain village.",
  "Write a long poem about the sea at night.",
  "Explain how a computer runs a program, from the keyboard to the screen.",
  "Tell a story about two friends who get lost in a forest and find their way home.",
  "Describe how to plan a week-long trip by train across a country.",
  "Write an essay about why people keep dogs as pets.",
];

/** The user message of the n-th request of a run: numbered, so that no two requests of a run are the same. */
export const userMessage = (n) => `Request ${n + 1}. ${asks[n % asks.length]}`;
