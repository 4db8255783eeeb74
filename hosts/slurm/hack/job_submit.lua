-- job_submit.lua: jobs submitted to the partitions fleet manages start
-- held (priority 0), so Slurm's own scheduler never places them; fleet
-- sets each one's ReqNodeList and releases it. Install it beside
-- slurm.conf and set JobSubmitPlugins=lua.
--
-- FLEET_PARTITIONS lists the managed partitions; a job that names none
-- goes to the default partition, which is managed when it is listed here.

local FLEET_PARTITIONS = { inference = true, research = true, batch = true, scratch = true }
local DEFAULT_PARTITION = "batch"

local function managed(partition)
	if partition == nil or partition == "" then
		partition = DEFAULT_PARTITION
	end
	for p in string.gmatch(partition, "[^,]+") do
		if FLEET_PARTITIONS[p] then
			return true
		end
	end
	return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
	if managed(job_desc.partition) then
		job_desc.priority = 0
	end
	return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
	return slurm.SUCCESS
end

return slurm.SUCCESS
