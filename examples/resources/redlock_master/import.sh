# A master is imported by its (absolute) data directory.
terraform import redlock_master.m1 /srv/redlock/m1
