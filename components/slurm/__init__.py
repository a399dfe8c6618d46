"""Slurm on a VM cluster, cloud-neutral: the configuration files and node commands rendered from the resolved
cluster (pure functions; the head node and the clouds' components install them).

- site.py: where the daemons and programs live on the head node and the nodes (SlurmSite);
- slurm_conf.py: slurm.conf (controller, munge, cons_tres, GPU GRES, dynamic nodes in per-group node sets,
  partitions, power saving, the health check);
- gres_conf.py: a node's gres.conf from its instance type's catalog row;
- registration.py: the dynamic slurmd registration of a node (its features and GRES);
- health_check.py: the HealthCheckProgram, the node check that drains a failing node;
- power.py: ResumeProgram / SuspendProgram, the group capacity behind Slurm's node names, through a per-cloud seam.
"""
