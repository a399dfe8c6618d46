"""Slurm on a VM cluster, cloud-neutral: the configuration files and node commands rendered from the resolved
cluster (pure functions; the head node and the clouds' components install them).

- site.py: where the daemons and programs live on the head node and the nodes (SlurmSite);
- slurm_conf.py: slurm.conf (controller, munge, cons_tres, GPU GRES, dynamic nodes in per-group node sets,
  partitions, power saving, the health check);
- gres_conf.py: a node's gres.conf from its instance type's catalog row;
- registration.py: the dynamic slurmd registration of a node (its features, GRES and switch);
- topology.py: topology.conf, a leaf switch per fabric group, and the switch each node joins;
- health_check.py: the HealthCheckProgram, the node check that drains a failing node;
- power.py: ResumeProgram / SuspendProgram, the group capacity behind Slurm's node names, through a per-cloud seam;
- queue_watch.py: the queue watcher, which raises capacity for pending jobs (scale-up from 0) and deletes dead names;
- controller.py: the Slurm client calls those make (scontrol, squeue, sinfo);
- power_program.py: the head node's one power program (resume, suspend, watch);
- power_units.py: the head node's power files (power.json, the programs, the watcher's service and timer);
- spot_leave.py: a node's exit from Slurm on an interruption notice (drain, then requeue its jobs and delete it).
"""
