// Re-validates the committed grammar-constrained outputs
// (tests/golden/json_schema/generation.json) against their schemas with ajv,
// independently of the generator that wrote them.
// Run: node --test scripts/golden/json-schema-golden.test.mjs
import test from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import {makeValidator, readSchema, schemaNames, SCHEMA_DIR} from "./json-schema-validator.mjs";

const golden = JSON.parse(fs.readFileSync(path.join(SCHEMA_DIR, "generation.json"), "utf8"));
const validate = makeValidator();

test("at least 20 schemas, each with llama.cpp's grammar beside it", () => {
    const names = schemaNames();
    assert.ok(names.length >= 20, `${names.length} schemas`);
    for (const name of names) assert.ok(fs.existsSync(path.join(SCHEMA_DIR, `${name}.gbnf`)), `${name}.gbnf missing`);
});

test("at least 15 completed generations", () => {
    assert.ok(golden.cases.length >= 15, `${golden.cases.length} cases`);
});

for (const c of golden.cases) {
    test(`${c.schema}: the output is JSON that satisfies the schema`, () => {
        assert.equal(c.stop, "eog", "the grammar completed and the model ended the generation");
        assert.ok(c.ids.length > 0 && c.prompt_ids.length > 0);
        const verdict = validate(c.schema, c.text);
        assert.ok(verdict.ok, `${verdict.errors}: ${JSON.stringify(c.text)}`);
    });
}

// The validator itself must be able to say no.
test("the validator rejects outputs that break a schema", () => {
    assert.equal(validate("person", "{\"name\": \"A\", \"age\": 200, \"is_student\": true}").ok, false);
    assert.equal(validate("formats", "{\"day\": \"2023-13-01\", \"at\": \"10:00:00Z\", \"id\": \"x\"}").ok, false);
    assert.equal(validate("pattern_phone", "{\"phone\": \"123\", \"code\": \"AB-1\"}").ok, false);
    assert.equal(validate("refs_defs", "{\"from\": {}, \"to\": {}}").ok, false);
    assert.equal(validate("person", "{\"name\": ").ok, false);
    assert.ok(readSchema("person").required.includes("age"));
});
