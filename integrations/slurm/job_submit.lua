--[[
job_submit.lua — colloc's submit-time policy for Slurm 22.05 (docs/slurm.md).

Install as job_submit.lua next to slurm.conf, with JobSubmitPlugins=lua.
slurmctld runs slurm_job_submit() for every job, under its own locks, so
this file does only table lookups and arithmetic: no processes, no I/O
(colloc_submit.conf is read once, when slurmctld loads the script; touch
this file after editing it, as slurmctld reloads a script whose time
changed).

What it does, for a job that the colloc SPANK plugin annotated
(sbatch/srun --colloc-model=MODEL --colloc-batch=N: the estimate arrives
in job_desc.spank_job_env as COLLOC_NEED_BYTES and friends):
  * the job's per-node GPU request becomes gres:shard:N, N = the estimate
    divided by shard_size, rounded up (other gres are kept);
  * a job that needs more shards than any GPU has (max_shards_per_gpu) is
    refused at submit with "colloc: ..." (22.05 would accept it and leave it
    pending forever);
  * what was decided goes into the job's AdminComment.
Jobs without an estimate are left exactly as they are, unless
convert_gpu=yes: then a whole-GPU request (gres:gpu:1 per node) becomes
gres:shard:max_shards_per_gpu, so that it never lands on a GPU whose shards
other jobs hold.

colloc_submit.conf (KEY=VALUE lines, '#' comments; `colloc slurm-gres`
prints the first two):
  shard_size=1073741824      bytes of GPU memory per shard (1GiB, 512MiB ok)
  max_shards_per_gpu=40      shards of the largest GPU (0: never refuse)
  convert_gpu=no             yes: gres:gpu:1 jobs take a whole GPU's shards
--]]

local GIB = 1073741824

local cfg = {
	shard_size = GIB,
	max_shards_per_gpu = 0,
	convert_gpu = false,
}

local function parse_size(s)
	local num, unit = string.match(s, "^(%d+)(%a*)$")
	local mult = { [""] = 1, B = 1, K = 1024, KiB = 1024, M = 1048576,
		MiB = 1048576, G = GIB, GiB = GIB, T = 1024 * GIB, TiB = 1024 * GIB }
	if not num or not mult[unit] then
		return nil
	end
	return tonumber(num) * mult[unit]
end

local function config_dir()
	local src = debug.getinfo(1, "S").source
	if type(src) == "string" and string.sub(src, 1, 1) == "@" then
		local dir = string.match(string.sub(src, 2), "^(.*)/[^/]*$")
		if dir then
			return dir
		end
	end
	local conf = os.getenv("SLURM_CONF")
	if conf then
		local dir = string.match(conf, "^(.*)/[^/]*$")
		if dir then
			return dir
		end
	end
	return "/etc/slurm"
end

local function load_config()
	local path = config_dir() .. "/colloc_submit.conf"
	local f = io.open(path, "r")
	if not f then
		slurm.log_info("colloc: %s not found; shard_size 1GiB, no refusal of "
			.. "jobs larger than a GPU", path)
		return
	end
	local lineno = 0
	for line in f:lines() do
		lineno = lineno + 1
		if lineno > 1000 then
			break
		end
		line = string.gsub(line, "#.*$", "")
		local key, value = string.match(line, "^%s*([%w_]+)%s*=%s*(%S+)%s*$")
		if key == "shard_size" and parse_size(value) and parse_size(value) > 0 then
			cfg.shard_size = parse_size(value)
		elseif key == "max_shards_per_gpu" and string.match(value, "^%d+$") then
			cfg.max_shards_per_gpu = tonumber(value)
		elseif key == "convert_gpu" and (value == "yes" or value == "no") then
			cfg.convert_gpu = value == "yes"
		elseif key or string.match(line, "%S") then
			slurm.log_error("colloc: %s:%d: ignored (known: shard_size=SIZE "
				.. "max_shards_per_gpu=N convert_gpu=yes|no)", path, lineno)
		end
	end
	f:close()
end

load_config()

local function gib(bytes)
	return string.format("%.2f GiB", bytes / GIB)
end

-- The KEY=VALUE entries of the job control environment, by key. Slurm's
-- table is indexed from 0; prolog-side copies carry a SPANK_ prefix.
local function spank_env(job_desc)
	local env = {}
	local t = job_desc.spank_job_env
	if type(t) ~= "table" then
		return env
	end
	for _, entry in pairs(t) do
		local k, v = string.match(tostring(entry), "^([^=]+)=(.*)$")
		if k then
			k = string.gsub(k, "^SPANK_", "")
			env[k] = v
		end
	end
	return env
end

-- "gres:gpu:2,gres:shard:4,gres:nic:1" into a list of
-- {name=, spec=, count=}; "gres/" and bare "gpu:2" are read too.
local function parse_tres(s)
	local list = {}
	if not s or s == "" then
		return list
	end
	for item in string.gmatch(s, "[^,]+") do
		local spec = string.gsub(string.gsub(item, "^gres:", ""), "^gres/", "")
		local name = string.match(spec, "^([^:]+)")
		local count = tonumber(string.match(spec, ":(%d+)$") or "1")
		table.insert(list, { name = name, spec = spec, count = count })
	end
	return list
end

local function mentions_gpu(s)
	for _, e in ipairs(parse_tres(s)) do
		if e.name == "gpu" or e.name == "shard" or e.name == "mps" then
			return true
		end
	end
	return false
end

-- tres_per_node without gpu/shard entries, plus "gres:shard:N".
local function with_shards(tres, shards)
	local out = {}
	for _, e in ipairs(parse_tres(tres)) do
		if e.name ~= "gpu" and e.name ~= "shard" then
			table.insert(out, "gres:" .. e.spec)
		end
	end
	table.insert(out, "gres:shard:" .. shards)
	return table.concat(out, ",")
end

local function model_job(job_desc, env)
	local need = tonumber(env.COLLOC_NEED_BYTES or env.COLLOC_PEAK_BYTES)
	local model = env.COLLOC_MODEL or "?"
	local batch = env.COLLOC_BATCH or "?"
	if not need or need <= 0 then
		slurm.log_user("colloc: the job's estimate (COLLOC_NEED_BYTES) is missing "
			.. "or not a number; resubmit with --colloc-model and --colloc-batch")
		return slurm.ERROR
	end
	if mentions_gpu(job_desc.tres_per_job) or mentions_gpu(job_desc.tres_per_task)
		or mentions_gpu(job_desc.tres_per_socket) then
		slurm.log_user("colloc: --colloc-model sizes one GPU share per node; drop "
			.. "--gpus, --gpus-per-task and --gpus-per-socket (or the model)")
		return slurm.ERROR
	end
	for _, e in ipairs(parse_tres(job_desc.tres_per_node)) do
		if e.name == "gpu" and e.count > 1 then
			slurm.log_user("colloc: --colloc-model sizes one GPU share per "
				.. "node, but the job asks for %s per node", e.spec)
			return slurm.ERROR
		end
	end
	local shards = math.ceil(need / cfg.shard_size)
	if shards < 1 then
		shards = 1
	end
	local max = cfg.max_shards_per_gpu
	if max > 0 and shards > max then
		slurm.log_user("colloc: %s at batch %s needs %s, %d shards of %s, but "
			.. "the largest GPU has %d shards (%s); it can never start: use a "
			.. "smaller --colloc-batch", model, batch, gib(need), shards,
			gib(cfg.shard_size), max, gib(max * cfg.shard_size))
		return slurm.ERROR
	end
	local was = job_desc.tres_per_node
	job_desc.tres_per_node = with_shards(was, shards)
	job_desc.admin_comment = string.format(
		"colloc: %s batch %s needs %s (%s estimate, platform %s) -> gres:shard:%d "
		.. "(1 shard = %s)%s", model, batch, gib(need),
		env.COLLOC_SAFETY or "point", env.COLLOC_PLATFORM or "default", shards,
		gib(cfg.shard_size),
		(was and was ~= "") and (", replacing " .. was) or "")
	return slurm.SUCCESS
end

local function whole_gpu_job(job_desc)
	local list = parse_tres(job_desc.tres_per_node)
	local gpu
	for _, e in ipairs(list) do
		if e.name == "shard" then
			return slurm.SUCCESS
		end
		if e.name == "gpu" then
			gpu = e
		end
	end
	if not gpu or gpu.count ~= 1 or cfg.max_shards_per_gpu <= 0
		or mentions_gpu(job_desc.tres_per_job)
		or mentions_gpu(job_desc.tres_per_task) then
		return slurm.SUCCESS
	end
	local was = job_desc.tres_per_node
	job_desc.tres_per_node = with_shards(was, cfg.max_shards_per_gpu)
	job_desc.admin_comment = string.format(
		"colloc: %s converted to gres:shard:%d (a whole GPU's shards)", was,
		cfg.max_shards_per_gpu)
	return slurm.SUCCESS
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	local env = spank_env(job_desc)
	if env.COLLOC_NEED_BYTES or env.COLLOC_PEAK_BYTES or env.COLLOC_MODEL then
		return model_job(job_desc, env)
	end
	if cfg.convert_gpu then
		return whole_gpu_job(job_desc)
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
