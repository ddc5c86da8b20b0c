// The Argo CD health checks (Lua, run by Argo CD's gopher-lua) that show zone-health.ts's verdict and sentence for
// the zone kinds, generated from the same wording table and deadlines so that `vmzones status` and Argo CD say the
// same words. The decision is written again in Lua below, step for step as zone-health.ts makes it;
// test/unit/observe/zone-health-lua.test.ts runs this Lua in a real Lua 5.1 engine against the TypeScript.
// Also the operator-verdict-only check of the other VictoriaMetrics kinds, and the AnalysisRun check that adds a
// vmzones gate's failure code and zone to Argo CD's verdict. scripts/argocd-health.ts writes the argocd-cm patches.

import { metadataKeys } from '../gates/provider.ts';
import {
  analysisHealthWords,
  defaultHealthReadyTimeoutSeconds,
  healthAnnotations,
  zoneHealthAwaited,
  zoneHealthDeadlines,
  zoneHealthSteps,
  zoneHealthWords,
} from './zone-health.ts';

/** A Lua string literal (the words are ASCII; a non-ASCII one would need escapes Lua 5.1 lacks). */
function luaString(text: string): string {
  if (!/^[\x20-\x7e]*$/.test(text)) throw new Error(`health words must be printable ASCII: ${text}`);
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function luaTable(values: Readonly<Record<string, string | number | undefined>>): string {
  const rows = Object.entries(values)
    .filter(([, value]) => value !== undefined)
    .map(
      ([key, value]) => `  ${key} = ${typeof value === 'number' ? String(value) : luaString(String(value))},`,
    );
  return `{\n${rows.join('\n')}\n}`;
}

/** A Lua expression that fills `template` from the Lua table named `table`, with no library function (the checks
 *  that need no string library run without Argo CD's useOpenLibs). */
function luaTemplate(template: string, table: string): string {
  const parts = template.split(/\{(\w+)\}/);
  return parts
    .map((part, i) => (i % 2 === 0 ? luaString(part) : `tostring(${table}.${part} or "")`))
    .filter((part) => part !== '""')
    .join(' .. ');
}

const fillLua = `local function fill(template, values)
  return (string.gsub(template, "{(%w+)}", function(key)
    local value = values[key]
    if value == nil then return "" end
    return tostring(value)
  end))
end`;

/** The operator's verdict: zone-health.ts operatorVerdict. */
const verdictLua = `local function verdictOf(obj)
  local status = obj.status
  if status == nil or type(status.updateStatus) ~= "string" then
    return { status = "Progressing", message = words.noStatus }
  end
  local generation = obj.metadata and obj.metadata.generation
  if type(generation) == "number" and type(status.observedGeneration) == "number" and status.observedGeneration < generation then
    local values = { generation = generation }
    return { status = "Progressing", message = ${luaTemplate(zoneHealthWords.notObserved, 'values')} }
  end
  local state = status.updateStatus
  if state == "operational" then return { status = "Healthy", message = words.operational } end
  if state == "expanding" then return { status = "Progressing", message = words.expanding } end
  if state == "paused" then return { status = "Suspended", message = words.paused } end
  if state == "failed" then
    if type(status.reason) == "string" then return { status = "Degraded", message = status.reason } end
    return { status = "Degraded", message = words.failed }
  end
  return { status = "Progressing", message = state }
end`;

/** A JSON decoder for the annotations (Argo CD's Lua has no JSON module): objects, arrays, strings, numbers,
 *  true/false/null; anything else is an error, which the check reports as StateInvalid. */
const jsonLua = `local arrays = {}
local function decodeJson(text)
  local pos = 1
  local depth = 0
  local function skip()
    pos = string.find(text, "[^ \\t\\r\\n]", pos) or (#text + 1)
  end
  local function utf8(code)
    if code < 128 then return string.char(code) end
    if code < 2048 then return string.char(192 + math.floor(code / 64), 128 + code % 64) end
    if code < 65536 then
      return string.char(224 + math.floor(code / 4096), 128 + math.floor(code / 64) % 64, 128 + code % 64)
    end
    return string.char(240 + math.floor(code / 262144), 128 + math.floor(code / 4096) % 64, 128 + math.floor(code / 64) % 64, 128 + code % 64)
  end
  local escapes = { ['"'] = '"', ["\\\\"] = "\\\\", ["/"] = "/", b = "\\b", f = "\\f", n = "\\n", r = "\\r", t = "\\t" }
  local value
  local function str()
    pos = pos + 1
    local out = {}
    while true do
      local stop = string.find(text, '["\\\\]', pos)
      if stop == nil then error("unterminated string") end
      out[#out + 1] = string.sub(text, pos, stop - 1)
      pos = stop
      if string.sub(text, pos, pos) == '"' then
        pos = pos + 1
        return table.concat(out)
      end
      local e = string.sub(text, pos + 1, pos + 1)
      if escapes[e] ~= nil then
        out[#out + 1] = escapes[e]
        pos = pos + 2
      elseif e == "u" then
        local hex = string.sub(text, pos + 2, pos + 5)
        if string.find(hex, "^%x%x%x%x$") == nil then error("bad unicode escape") end
        local code = tonumber(hex, 16)
        pos = pos + 6
        if code >= 55296 and code < 56320 and string.sub(text, pos, pos + 1) == "\\\\u" then
          local low = tonumber(string.sub(text, pos + 2, pos + 5), 16)
          if low ~= nil and low >= 56320 and low < 57344 then
            code = 65536 + (code - 55296) * 1024 + (low - 56320)
            pos = pos + 6
          end
        end
        out[#out + 1] = utf8(code)
      else
        error("bad escape")
      end
    end
  end
  value = function()
    skip()
    local c = string.sub(text, pos, pos)
    if c == "{" or c == "[" then
      depth = depth + 1
      if depth > 32 then error("nested too deeply") end
      local result = {}
      pos = pos + 1
      skip()
      local close = "}"
      if c == "[" then
        close = "]"
        arrays[result] = true
      end
      if string.sub(text, pos, pos) == close then
        pos = pos + 1
        depth = depth - 1
        return result
      end
      while true do
        if c == "{" then
          skip()
          if string.sub(text, pos, pos) ~= '"' then error("object key expected") end
          local key = str()
          skip()
          if string.sub(text, pos, pos) ~= ":" then error("colon expected") end
          pos = pos + 1
          result[key] = value()
        else
          result[#result + 1] = value()
        end
        skip()
        local sep = string.sub(text, pos, pos)
        pos = pos + 1
        if sep == close then
          depth = depth - 1
          return result
        end
        if sep ~= "," then error("comma expected") end
      end
    end
    if c == '"' then return str() end
    if string.sub(text, pos, pos + 3) == "true" then pos = pos + 4 return true end
    if string.sub(text, pos, pos + 4) == "false" then pos = pos + 5 return false end
    if string.sub(text, pos, pos + 3) == "null" then pos = pos + 4 return nil end
    local number = string.match(text, "^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
    if number == nil or number == "" then error("value expected") end
    pos = pos + #number
    local parsed = tonumber(number)
    if parsed == nil then error("bad number") end
    return parsed
  end
  local result = value()
  skip()
  if pos <= #text then error("trailing text") end
  return result
end`;

/** The fields each annotation must have for the check to read it (the required fields of zone-annotations.ts). */
const recordsLua = `local function isString(v) return type(v) == "string" end
local function optString(v) return v == nil or type(v) == "string" end
local function isObject(v) return type(v) == "table" and not arrays[v] end
local function sameHolder(record, holder)
  return record ~= nil and holder ~= nil and record.rollout == holder.rollout and record.uid == holder.uid and record.revision == holder.revision
end
local schemas = {
  ["${healthAnnotations[0]}"] = function(r)
    return isString(r.rollout) and isString(r.uid) and isString(r.revision) and isString(r.since) and optString(r.zone)
  end,
  ["${healthAnnotations[1]}"] = function(r)
    return isString(r.zone) and isString(r.since) and isString(r.reason) and optString(r.restoringSince)
  end,
  ["${healthAnnotations[2]}"] = function(r)
    return isString(r.rollout) and isString(r.uid) and isString(r.revision) and isString(r.zone)
      and (r.phase == "applied" or r.phase == "requested" or r.phase == "reverted")
      and isString(r.appliedAt) and type(r.generation) == "number" and type(r.changes) == "table" and arrays[r.changes] == true
      and optString(r.requestedAt) and optString(r.revertedAt)
  end,
  ["${healthAnnotations[3]}"] = function(r)
    return isString(r.zone) and isObject(r.holder) and isString(r.holder.rollout) and isString(r.holder.uid)
      and isString(r.holder.revision) and isString(r.requestedAt) and isString(r.by) and type(r.rollback) == "boolean"
      and type(r.reads) == "table" and isString(r.drainGracePeriod) and optString(r.message)
  end,
}
local order = { ${healthAnnotations.map(luaString).join(', ')} }
-- The records, or the StateInvalid sentence of the first one (in this order) that does not read.
local function readRecords(annotations)
  local records = {}
  for _, key in ipairs(order) do
    local text = annotations[key]
    if type(text) == "string" and text ~= "" then
      local ok, record = pcall(decodeJson, text)
      if not ok or not isObject(record) then
        return nil, fill(words.malformed, { annotation = key })
      end
      if type(record.v) == "number" and record.v > 1 then
        return nil, fill(words.newerFormat, { annotation = key, format = record.v })
      end
      local versionOk = record.v == nil or (type(record.v) == "number" and record.v == math.floor(record.v) and record.v >= 1)
      if not versionOk or not schemas[key](record) then
        return nil, fill(words.malformed, { annotation = key })
      end
      records[key] = record
    end
  end
  return records, nil
end`;

/** The seconds since the epoch of an RFC 3339 time: zone-health.ts healthTimeSeconds. */
const timeLua = `local function epochSeconds(text)
  if type(text) ~= "string" then return nil end
  local y, mo, d, h, mi, s, rest = string.match(text, "^(%d%d%d%d)%-(%d%d)%-(%d%d)T(%d%d):(%d%d):(%d%d)(.*)$")
  if y == nil then return nil end
  local frac, zone = string.match(rest, "^(%.?%d*)(.*)$")
  if frac ~= "" and string.match(frac, "^%.%d+$") == nil then return nil end
  local offset = 0
  if zone ~= "Z" then
    local sign, oh, om = string.match(zone, "^([+-])(%d%d):(%d%d)$")
    if sign == nil then return nil end
    offset = tonumber(oh) * 3600 + tonumber(om) * 60
    if sign == "-" then offset = -offset end
  end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  if mo <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (mo + 9) % 12
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s) - offset
end
local function formatDuration(seconds)
  local whole = math.max(0, math.floor(seconds))
  local h = math.floor(whole / 3600)
  local m = math.floor((whole % 3600) / 60)
  local s = whole % 60
  local text = ""
  if h > 0 then text = text .. h .. "h" end
  if m > 0 then text = text .. m .. "m" end
  if s > 0 then text = text .. s .. "s" end
  if text == "" then return "0s" end
  return text
end`;

/** Where vmzones has the zone: zone-health.ts vmzonesSentence, same order. */
const sentenceLua = `local function heldSentence(values)
  local template = words.held
  if values.detail ~= nil then template = words.heldDetail end
  return {
    sentence = fill(template, {
      zone = values.zone, rollout = values.rollout, outSince = values.outSince,
      step = steps[values.step], stepSince = values.stepSince, detail = values.detail,
    }),
    step = values.step,
    stepSince = values.stepSince,
  }
end
local function vmzonesSentence(records, verdict, observed)
  local lease = records["${healthAnnotations[0]}"]
  local maintenance = records["${healthAnnotations[1]}"]
  local rollback = records["${healthAnnotations[2]}"]
  local handoff = records["${healthAnnotations[3]}"]
  local zone = (maintenance and maintenance.zone) or (handoff and handoff.zone) or (rollback and rollback.zone) or (lease and lease.zone) or ""
  if handoff ~= nil then
    local undoing = handoff.rollback and sameHolder(rollback, handoff.holder)
      and (rollback.phase == "requested" or (rollback.phase == "reverted" and verdict.status ~= "Healthy"))
    local step = "reconciling"
    local stepSince = handoff.requestedAt
    if undoing then
      step = "rollingBack"
      if rollback.requestedAt ~= nil then stepSince = rollback.requestedAt end
    end
    local detail = handoff.message
    if detail == nil then detail = handoff.by end
    return heldSentence({
      zone = zone, rollout = handoff.holder.rollout, outSince = (maintenance and maintenance.since) or handoff.requestedAt,
      step = step, stepSince = stepSince, detail = detail,
    })
  end
  if maintenance ~= nil then
    local rollout = "unknown"
    if lease ~= nil then rollout = lease.rollout end
    local base = { zone = zone, rollout = rollout, outSince = maintenance.since }
    if maintenance.restoringSince ~= nil then
      base.step = "restoring"
      base.stepSince = maintenance.restoringSince
      return heldSentence(base)
    end
    if rollback ~= nil and rollback.phase == "applied" and sameHolder(rollback, lease) then
      local ready = verdict.status == "Healthy" and (observed or 0) >= rollback.generation
      base.step = "applying"
      if ready then base.step = "evidence" end
      base.stepSince = rollback.appliedAt
      return heldSentence(base)
    end
    base.step = "draining"
    base.stepSince = maintenance.since
    return heldSentence(base)
  end
  if rollback ~= nil and rollback.phase == "applied" then
    return fill(words.serving, { zone = zone, rollout = rollback.rollout, revision = rollback.revision, appliedAt = rollback.appliedAt })
  end
  if lease ~= nil then
    return fill(words.leased, { zone = zone, rollout = lease.rollout, since = lease.since })
  end
  return nil
end`;

/** The whole check: zone-health.ts zoneHealth. */
const mainLua = `local verdict = verdictOf(obj)
local annotations = (obj.metadata and obj.metadata.annotations) or {}
local records, malformed = readRecords(annotations)
if malformed ~= nil then
  return { status = "Degraded", message = malformed }
end
local observed = nil
if obj.status ~= nil and type(obj.status.observedGeneration) == "number" then observed = obj.status.observedGeneration end
local held = vmzonesSentence(records, verdict, observed)
if held == nil then return verdict end
local kind = obj.kind or "VMCluster"
local sentence = held
if type(held) == "table" then sentence = held.sentence end
if verdict.status == "Degraded" then
  return { status = "Degraded", message = fill(words.operatorFailed, { sentence = sentence, kind = kind, verdict = verdict.message }) }
end
if type(held) == "table" then
  local since = epochSeconds(held.stepSince)
  local deadline = deadlines[held.step]
  local limit = deadline.factor * readyTimeout
  if since ~= nil and os.time() > since + limit then
    local code = ""
    if deadline.code ~= nil then code = fill(words.pastDeadlineCode, { code = deadline.code }) end
    return {
      status = "Degraded",
      message = fill(words.pastDeadline, { sentence = sentence, awaited = awaited[held.step], limit = formatDuration(limit), code = code }),
    }
  end
end
return { status = verdict.status, message = fill(words.withVerdict, { sentence = sentence, kind = kind, verdict = verdict.message }) }`;

function header(what: string): string {
  return `-- ${what}\n-- Generated from plugin/observe/zone-health.ts by scripts/argocd-health.ts; docs/gitops.md "Zone health in Argo CD".`;
}

/** The check of a zone kind (VMCluster, VMSingle, VLCluster). */
export function zoneHealthLua(readyTimeoutSeconds = defaultHealthReadyTimeoutSeconds): string {
  const deadlines = Object.entries(zoneHealthDeadlines)
    .map(
      ([step, d]) => `  ${step} = { factor = ${d.factor}${d.code ? `, code = ${luaString(d.code)}` : ''} },`,
    )
    .join('\n');
  return [
    header("vmzones: the operator's verdict, and where vmzones has the zone (its annotations)."),
    `-- Change readyTimeout (seconds) to the spec's readyTimeout when it is not the default 15m.`,
    `local readyTimeout = ${readyTimeoutSeconds}`,
    `local words = ${luaTable(zoneHealthWords)}`,
    `local steps = ${luaTable(zoneHealthSteps)}`,
    `local awaited = ${luaTable(zoneHealthAwaited)}`,
    `local deadlines = {\n${deadlines}\n}`,
    fillLua,
    verdictLua,
    jsonLua,
    recordsLua,
    timeLua,
    sentenceLua,
    mainLua,
    '',
  ].join('\n');
}

/** The operator's verdict alone, for the VictoriaMetrics kinds that are not zones (VMAgent, VMAuth, VMUser). */
const { noStatus, operational, expanding, paused, failed } = zoneHealthWords;
const verdictWords = { noStatus, operational, expanding, paused, failed };

export function operatorHealthLua(): string {
  return [
    header("The VictoriaMetrics operator's verdict (as Argo CD 3.5 built it in)."),
    `local words = ${luaTable(verdictWords)}`,
    verdictLua,
    'return verdictOf(obj)',
    '',
  ].join('\n');
}

/** Argo CD's verdict of an AnalysisRun by its phase, with a vmzones gate's zone and failure code added to the
 *  message of a failed run. */
export function analysisHealthLua(): string {
  return [
    header(
      "An AnalysisRun's phase as Argo CD judges it; a failed vmzones gate's message names its zone and code.",
    ),
    `local words = ${luaTable(analysisHealthWords)}`,
    `local phases = {
  Pending = { "Progressing", words.running },
  Running = { "Progressing", words.running },
  Successful = { "Healthy", words.successful },
  Failed = { "Degraded", words.failed },
  Error = { "Degraded", words.error },
  Inconclusive = { "Unknown", words.inconclusive },
}
if obj.status == nil or phases[obj.status.phase] == nil then
  return { status = "Progressing", message = words.notReconciled }
end
local verdict = phases[obj.status.phase]
local message = obj.status.message
if type(message) ~= "string" or message == "" then message = verdict[2] end
if verdict[1] == "Degraded" then
  local zone = nil
  if obj.spec ~= nil and obj.spec.args ~= nil then
    for _, arg in ipairs(obj.spec.args) do
      if arg.name == "zone" and type(arg.value) == "string" then zone = arg.value end
    end
  end
  for _, result in ipairs(obj.status.metricResults or {}) do
    if result.phase == "Failed" or result.phase == "Error" then
      local measurements = result.measurements or {}
      local last = measurements[#measurements]
      local code = last and last.metadata and last.metadata[${luaString(metadataKeys.failureCode)}]
      if type(code) == "string" and zone ~= nil then
        local said = last.message
        if type(said) ~= "string" then said = "" end
        local values = { zone = zone, metric = result.name, phase = result.phase, code = code, message = said }
        message = ${luaTemplate(analysisHealthWords.gateFailed, 'values')}
        break
      end
    end
  end
end
return { status = verdict[1], message = message }`,
    '',
  ].join('\n');
}

export const zoneHealthKinds = ['VMCluster', 'VMSingle', 'VLCluster'] as const;
export const operatorHealthKinds = ['VMAgent', 'VMAuth', 'VMUser'] as const;
const vmGroup = 'operator.victoriametrics.com';

/** The argocd-cm data: health checks of the zone kinds (with the standard libraries they need: string and math,
 *  for the annotations' JSON and times), the other VictoriaMetrics kinds, and AnalysisRun (those two need none). */
export function argocdHealthData(
  readyTimeoutSeconds = defaultHealthReadyTimeoutSeconds,
): Record<string, string> {
  const data: Record<string, string> = {};
  for (const kind of zoneHealthKinds) {
    data[`resource.customizations.health.${vmGroup}_${kind}`] = zoneHealthLua(readyTimeoutSeconds);
    data[`resource.customizations.useOpenLibs.${vmGroup}_${kind}`] = 'true';
  }
  for (const kind of operatorHealthKinds) {
    data[`resource.customizations.health.${vmGroup}_${kind}`] = operatorHealthLua();
  }
  data['resource.customizations.health.argoproj.io_AnalysisRun'] = analysisHealthLua();
  return data;
}
