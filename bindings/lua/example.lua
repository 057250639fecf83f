-- example.lua: quantize a million normal samples to several formats with
-- piquant from Lua 5.1 through lgi.
--
-- SPDX-License-Identifier: LGPL-2.1-or-later
--
-- Against a build tree run
--   GI_TYPELIB_PATH=$builddir/piquant LD_LIBRARY_PATH=$builddir/piquant/.libs lua5.1 example.lua

local lgi = require 'lgi'
local Piq = lgi.require('Piq', '1.0')

local N = 1000000

-- Each row: a format (what the bytes mean: per-tensor affine integers here)
-- and a recipe (how the scale is chosen: min/max, the default rule of affine
-- integers, computed from the data). The last one rounds stochastically, with
-- a fixed seed.
local FORMATS = {
  { 'uint8', { dtype = Piq.Dtype.UINT8 }, {} },
  { 'int8', { dtype = Piq.Dtype.INT8 }, {} },
  { 'uint4', { dtype = Piq.Dtype.UINT4 }, {} },
  { 'uint2', { dtype = Piq.Dtype.UINT2 }, {} },
  { 'uint4 stochastic', { dtype = Piq.Dtype.UINT4 }, { round_mode = Piq.RoundMode.STOCHASTIC, seed = 7 } },
}

-- [snippet:check]
-- lgi returns nil (or false) and a GLib.Error instead of raising;
-- Lua 5.1's assert() cannot print the error object, so unwrap it here
local function check(value, err)
  if value == nil or value == false then
    error(string.format('%s (Piq.Error.%s)', err.message, tostring(err.code)), 2)
  end
  return value
end
-- [/snippet]

-- N(0, 1) samples by the Box-Muller transform
local function normal_samples(n, seed)
  math.randomseed(seed)
  local x = {}
  for i = 1, n, 2 do
    local r = math.sqrt(-2 * math.log(1 - math.random()))
    local a = 2 * math.pi * math.random()
    x[i] = r * math.cos(a)
    if i < n then x[i + 1] = r * math.sin(a) end
  end
  return x
end

local q = Piq.Quantizer.get_default()
print(string.format('piquant %s, %s kernels, %d normal samples', Piq.VERSION_STRING, q.simd_level, N))

-- [snippet:setup]
-- a table of numbers crosses element by element (about 40 ns each)
local src = check(Piq.Tensor.new_from_values(Piq.Dtype.F32, normal_samples(N, 42)))
local x = src:to_values()   -- the binary32 values piquant quantizes
local acc = check(Piq.Tensor.new(Piq.Dtype.F32, N))
-- [/snippet]

print(string.format('%-17s %9s %10s %10s %9s', 'format', 'bytes', 'scale', 'zero point', 'RMSE'))
for _, f in ipairs(FORMATS) do
  local label, format_props, recipe_props = f[1], f[2], f[3]
  -- [snippet:quantize]
  local format = Piq.Format(format_props)   -- immutable: what the bytes mean
  local recipe = Piq.Recipe(recipe_props)   -- mutable: how the scale is chosen
  check(q:compute_params(format, recipe, src))
  local packed = check(q:quantize_new(format, recipe, src))  -- owns format, scale, zero point
  -- [/snippet]
  -- [snippet:accumulate]
  check(acc:fill(0))                                 -- reset the reused accumulator
  check(q:dequantize(packed, acc, Piq.ReduceOp.ADD)) -- acc += dequantized values
  local y = acc:to_values()
  -- [/snippet]
  local sum = 0
  for i = 1, N do sum = sum + (y[i] - x[i]) ^ 2 end
  print(string.format('%-17s %9d %10.6f %10d %9.6f', label, packed:get_n_bytes(), packed:get_scale(),
    packed:get_zero_point(), math.sqrt(sum / N)))
end

-- [snippet:errors]
-- 10 codes cannot hold a million elements; nil is the default recipe
local small = check(Piq.Tensor.new_quantized(Piq.Format { dtype = Piq.Dtype.UINT8 }, { 10 }))
local ok, err = q:quantize(nil, src, small)
if ok or not err:matches(Piq.Error, 'SIZE') then
  error('expected Piq.Error.SIZE')
end
print(string.format('\nrefused, %s: %s', err.code, err.message))   -- err.code is the nick 'SIZE'
-- [/snippet]
