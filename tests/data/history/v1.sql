-- A history database as the first schema version (kSchemaVersion 1, harness/src/history/history_store.cpp)
-- made it, with one run: tests/history_store_test.cpp migrates it. Never edit the schema part: it is
-- what version 1 wrote. Statements end with a semicolon at the end of a line.
CREATE TABLE schema_version (version BIGINT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL, git_commit TEXT, started_at TEXT, fingerprint TEXT, hostname TEXT, complete BIGINT NOT NULL, incomplete_reason TEXT, failed_rows BIGINT NOT NULL, added_at TEXT NOT NULL, machine_json TEXT, catalog_json TEXT);
CREATE TABLE run_files (run_id TEXT NOT NULL REFERENCES runs(run_id), name TEXT NOT NULL, content TEXT NOT NULL, PRIMARY KEY (run_id, name));
CREATE TABLE results (run_id TEXT NOT NULL REFERENCES runs(run_id), suite TEXT NOT NULL, workload TEXT NOT NULL, size TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, phase_index BIGINT NOT NULL, phase TEXT NOT NULL, status TEXT NOT NULL, reason TEXT, reps BIGINT, median_ms DOUBLE PRECISION, ci_low_ms DOUBLE PRECISION, ci_high_ms DOUBLE PRECISION, PRIMARY KEY (run_id, suite, workload, size, backend, device, phase));
CREATE TABLE samples (run_id TEXT NOT NULL REFERENCES runs(run_id), suite TEXT NOT NULL, workload TEXT NOT NULL, size TEXT NOT NULL, backend TEXT NOT NULL, device TEXT NOT NULL, phase TEXT NOT NULL, rep BIGINT NOT NULL, ms DOUBLE PRECISION NOT NULL, cpu_ms DOUBLE PRECISION, PRIMARY KEY (run_id, suite, workload, size, backend, device, phase, rep));
INSERT INTO schema_version (version) VALUES (1);
INSERT INTO runs VALUES ('20261120T090000Z-v1', '5d1f00000000v1', '0123456789ab', '2026-11-20T09:00:00Z', 'f00dcafe0001', 'v1host', 1, NULL, 0, '2026-11-20T09:05:00Z', '{"fingerprint": "f00dcafe0001", "run_id": "20261120T090000Z-v1", "git_commit": "0123456789ab", "hostname": "v1host"}', NULL);
INSERT INTO run_files VALUES ('20261120T090000Z-v1', 'results.csv', 'run_id,suite,workload,size,backend,device,phase_index,phase,exact,status,reason,rel_l2_err,max_abs_err,tolerance,reps,median_ms,min_ms,max_ms,ci_low_ms,ci_high_ms,speedup_vs_prev,speedup_vs_phase0,speedup_vs_reference,claimed_min,claimed_max,host_syncs_per_iter,ops_per_iter,bytes_alloc_per_iter,gb_per_s,gflop_per_s,roofline_pct,threads,shape,seed,worst_output,speedup_vs_prev_ci_low,speedup_vs_prev_ci_high,speedup_vs_phase0_ci_low,speedup_vs_phase0_ci_high,speedup_vs_reference_ci_low,speedup_vs_reference_ci_high,iterations_per_rep,schema,step_output,step_rel_l2_err,step_budget
20261120T090000Z-v1,trainer2,lior_step,small,reference,cpu,0,serial_fp32,1,OK,,,,,3,1.0,1.0,1.0,1.0,1.0,,,,,,,,,,,,1,,,,,,,,,,,1,,,
20261120T090000Z-v1,trainer2,lior_step,small,kokkos,cpu,0,baseline,1,OK,,,,,3,2.0,2.0,2.0,2.0,2.0,,,,,,,,,,,,1,,,,,,,,,,,1,,,
');
INSERT INTO run_files VALUES ('20261120T090000Z-v1', 'samples.csv', 'workload,size,backend,device,phase,rep,ms,suite,cpu_ms
lior_step,small,reference,cpu,serial_fp32,0,1.0,trainer2,1.0
lior_step,small,reference,cpu,serial_fp32,1,1.0,trainer2,1.0
lior_step,small,reference,cpu,serial_fp32,2,1.0,trainer2,1.0
lior_step,small,kokkos,cpu,baseline,0,2.0,trainer2,2.0
lior_step,small,kokkos,cpu,baseline,1,2.0,trainer2,2.0
lior_step,small,kokkos,cpu,baseline,2,2.0,trainer2,2.0
');
INSERT INTO run_files VALUES ('20261120T090000Z-v1', 'machine.json', '{"fingerprint": "f00dcafe0001", "run_id": "20261120T090000Z-v1", "git_commit": "0123456789ab", "hostname": "v1host"}');
INSERT INTO results VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'reference', 'cpu', 0, 'serial_fp32', 'OK', NULL, 3, 1.0, 1.0, 1.0);
INSERT INTO samples VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'reference', 'cpu', 'serial_fp32', 0, 1.0, 1.0);
INSERT INTO samples VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'reference', 'cpu', 'serial_fp32', 1, 1.0, 1.0);
INSERT INTO samples VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'reference', 'cpu', 'serial_fp32', 2, 1.0, 1.0);
INSERT INTO results VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'kokkos', 'cpu', 0, 'baseline', 'OK', NULL, 3, 2.0, 2.0, 2.0);
INSERT INTO samples VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'kokkos', 'cpu', 'baseline', 0, 2.0, 2.0);
INSERT INTO samples VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'kokkos', 'cpu', 'baseline', 1, 2.0, 2.0);
INSERT INTO samples VALUES ('20261120T090000Z-v1', 'trainer2', 'lior_step', 'small', 'kokkos', 'cpu', 'baseline', 2, 2.0, 2.0);
