// Validates JSON texts against the JSON schemas of tests/golden/json_schema/
// with ajv (draft 2020-12, plus ajv-formats for date, time, date-time and
// uuid): an independent check that grammar-constrained outputs really satisfy
// their schemas. Used by make-json-schema-golden.mjs (every output it
// records) and by json-schema-golden.test.mjs (the committed outputs).
// ajv is one of web/'s development packages (scripts/install-deps installs
// them), so that make test needs nothing installed in scripts/golden.
import fs from "node:fs";
import {createRequire} from "node:module";
import path from "node:path";
import {fileURLToPath} from "node:url";

const webRequire = createRequire(new URL("../../web/package.json", import.meta.url));
const Ajv2020 = webRequire("ajv/dist/2020.js").default;
const addFormats = webRequire("ajv-formats").default;

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SCHEMA_DIR = path.resolve(HERE, "..", "..", "tests", "golden", "json_schema");

export function schemaNames(dir = SCHEMA_DIR) {
    return fs.readdirSync(dir)
        .filter((f) => f.endsWith(".schema.json"))
        .map((f) => f.slice(0, -".schema.json".length))
        .sort();
}

export function readSchema(name, dir = SCHEMA_DIR) {
    return JSON.parse(fs.readFileSync(path.join(dir, `${name}.schema.json`), "utf8"));
}

// {ok, errors}: errors says why `text` is not JSON or breaks the schema.
export function makeValidator() {
    // strict: false accepts the older "definitions" keyword next to 2020-12's $defs.
    const ajv = new Ajv2020({strict: false, allErrors: true});
    addFormats(ajv);
    const compiled = new Map();
    return function validate(name, text, dir = SCHEMA_DIR) {
        if (!compiled.has(name)) compiled.set(name, ajv.compile(readSchema(name, dir)));
        let value;
        try {
            value = JSON.parse(text);
        } catch (e) {
            return {ok: false, errors: `not JSON: ${e.message}`};
        }
        const check = compiled.get(name);
        if (check(value)) return {ok: true, errors: ""};
        return {ok: false, errors: ajv.errorsText(check.errors)};
    };
}
