-- smoke.lua: the smallest round trip through the installed typelib (lgi).
--
-- SPDX-License-Identifier: LGPL-2.1-or-later
--
-- Prints the paths of the libpiquant and Piq typelib this process mapped, so
-- packaging/test-installed.sh can check they are the installed ones.

local lgi = require("lgi")
local Piq = lgi.require("Piq", "1.0")

local values = { 0.5, -1.25, 3.0 }
local expected = { 138, 103, 188 } -- round(x / 0.05) + 128

local q = Piq.Quantizer.get_default()
local src = Piq.Tensor.new_from_values(Piq.Dtype.F32, values)
local format = Piq.Format { dtype = Piq.Dtype.UINT8 }
local recipe = Piq.Recipe { scale = 0.05, zero_point = 128 }
local packed, err = q:quantize_new(format, recipe, src)
if not packed then error(err and err.message or "quantize_new failed") end
local data = packed:get_bytes():get_data()
local got = { data:byte(1, -1) }
for i = 1, #expected do
  if got[i] ~= expected[i] then
    error(string.format("quantized byte %d is %s, expected %d", i, tostring(got[i]), expected[i]))
  end
end
local y, err2 = q:dequantize_new(packed, Piq.Dtype.F32)
if not y then error(err2 and err2.message or "dequantize_new failed") end
local back, err3 = y:to_values()
if not back then error(err3 and err3.message or "to_values failed") end
for i = 1, #values do
  if math.abs(back[i] - values[i]) > 1e-6 then
    error(string.format("dequantized element %d is %g, expected %g", i, back[i], values[i]))
  end
end
print(string.format("lua: quantized %s, dequantized %s", table.concat(got, ","),
                    table.concat(back, ",")))

local paths, seen = {}, {}
for line in io.lines("/proc/self/maps") do
  if line:find("libpiquant-1.0.so", 1, true) or line:find("Piq-1.0.typelib", 1, true) then
    local path = line:match("(%S+)%s*$")
    if not seen[path] then seen[path] = true; paths[#paths + 1] = path end
  end
end
table.sort(paths)
for _, path in ipairs(paths) do print("mapped: " .. path) end
