import {getReferenceLlama} from "/work/main/scripts/golden/golden-lib.mjs";
const [modelPath, text, fa] = process.argv.slice(2);
const {llama} = await getReferenceLlama();
const model = await llama.loadModel({modelPath, defaultContextFlashAttention: fa === "on"});
const ctx = await model.createEmbeddingContext({contextSize: 512, batchSize: 512, threads: 2});
const e = await ctx.getEmbeddingFor(text);
console.log(JSON.stringify(Array.from(e.vector).map(Math.fround)));
