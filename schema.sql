CREATE TABLE alembic_version (
    version_num VARCHAR(32) NOT NULL, 
    CONSTRAINT alembic_version_pkc PRIMARY KEY (version_num)
);

-- Running upgrade  -> 0001

CREATE TABLE bn_config (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    bn_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, 
    data_type VARCHAR(32) NOT NULL, 
    layout VARCHAR(16) NOT NULL, 
    batchsize INTEGER NOT NULL, 
    in_channels INTEGER NOT NULL, 
    in_d INTEGER NOT NULL DEFAULT '0', 
    in_h INTEGER NOT NULL, 
    in_w INTEGER NOT NULL, 
    mode SMALLINT NOT NULL, 
    direction VARCHAR(16) NOT NULL, 
    save BOOL NOT NULL DEFAULT '0', 
    run BOOL NOT NULL DEFAULT '0', 
    alpha DOUBLE NOT NULL DEFAULT '1', 
    beta DOUBLE NOT NULL DEFAULT '0', 
    driver MEDIUMTEXT NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_bn_config PRIMARY KEY (id), 
    CONSTRAINT uq_bn_config_bn_key UNIQUE (bn_key)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE golden_version (
    version INTEGER NOT NULL, 
    parent INTEGER, 
    arch VARCHAR(64) NOT NULL, 
    num_cu INTEGER NOT NULL, 
    note TEXT, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_golden_version PRIMARY KEY (version), 
    CONSTRAINT fk_golden_version_parent_golden_version FOREIGN KEY(parent) REFERENCES golden_version (version)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE kernel_cache (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    identity VARCHAR(64) NOT NULL, 
    kernel_name VARCHAR(512) NOT NULL, 
    kernel_args MEDIUMTEXT NOT NULL, 
    kernel_hash VARCHAR(64) NOT NULL, 
    uncompressed_size BIGINT NOT NULL, 
    `blob` LONGBLOB NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_kernel_cache PRIMARY KEY (id), 
    CONSTRAINT uq_kernel_cache_identity UNIQUE (identity)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_kernel_cache_kernel_hash ON kernel_cache (kernel_hash);

CREATE TABLE machine (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    hostname VARCHAR(255) NOT NULL, 
    port INTEGER NOT NULL DEFAULT '22', 
    user VARCHAR(64), 
    arch VARCHAR(64), 
    num_cu INTEGER, 
    gpus JSON, 
    available BOOL NOT NULL DEFAULT '1', 
    key_file VARCHAR(512), 
    docker_settings JSON, 
    ipmi_address VARCHAR(255), 
    last_seen DATETIME(6), 
    CONSTRAINT pk_machine PRIMARY KEY (id), 
    CONSTRAINT uq_machine_hostname_port UNIQUE (hostname, port)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE session (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    arch VARCHAR(64) NOT NULL, 
    num_cu INTEGER NOT NULL, 
    backend VARCHAR(32) NOT NULL, 
    library_version VARCHAR(64), 
    library_commit VARCHAR(64), 
    toolchain VARCHAR(255), 
    docker_image VARCHAR(255), 
    docker_digest VARCHAR(128), 
    label VARCHAR(128), 
    ticket VARCHAR(64), 
    environment JSON, 
    fingerprint VARCHAR(64) NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_session PRIMARY KEY (id)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_session_fingerprint ON session (fingerprint);

CREATE TABLE solver (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    backend VARCHAR(32) NOT NULL, 
    name VARCHAR(128) NOT NULL, 
    tunable BOOL NOT NULL DEFAULT '0', 
    numeric_id INTEGER, 
    algorithm VARCHAR(64), 
    valid BOOL NOT NULL DEFAULT '1', 
    CONSTRAINT pk_solver PRIMARY KEY (id), 
    CONSTRAINT uq_solver_backend_name UNIQUE (backend, name)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE tensor (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    num_dims SMALLINT NOT NULL, 
    dim0 INTEGER NOT NULL, 
    dim1 INTEGER NOT NULL, 
    dim2 INTEGER NOT NULL, 
    dim3 INTEGER NOT NULL, 
    dim4 INTEGER NOT NULL DEFAULT '0', 
    layout VARCHAR(16) NOT NULL, 
    data_type VARCHAR(16) NOT NULL, 
    CONSTRAINT pk_tensor PRIMARY KEY (id), 
    CONSTRAINT uq_tensor_num_dims_dim0_dim1_dim2_dim3_dim4_layout_data_type UNIQUE (num_dims, dim0, dim1, dim2, dim3, dim4, layout, data_type)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE bn_config_tag (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    config INTEGER NOT NULL, 
    tag VARCHAR(128) NOT NULL, 
    recurrent BOOL NOT NULL DEFAULT '0', 
    CONSTRAINT pk_bn_config_tag PRIMARY KEY (id), 
    CONSTRAINT fk_bn_config_tag_config_bn_config FOREIGN KEY(config) REFERENCES bn_config (id) ON DELETE CASCADE, 
    CONSTRAINT uq_bn_config_tag_config_tag UNIQUE (config, tag)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_bn_config_tag_tag ON bn_config_tag (tag);

CREATE TABLE conv_config (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    fdb_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, 
    spatial_dim SMALLINT NOT NULL, 
    direction VARCHAR(1) NOT NULL, 
    mode VARCHAR(8) NOT NULL DEFAULT 'conv', 
    group_count INTEGER NOT NULL DEFAULT '1', 
    pad_d INTEGER NOT NULL DEFAULT '0', 
    pad_h INTEGER NOT NULL, 
    pad_w INTEGER NOT NULL, 
    conv_stride_d INTEGER NOT NULL DEFAULT '1', 
    conv_stride_h INTEGER NOT NULL, 
    conv_stride_w INTEGER NOT NULL, 
    dilation_d INTEGER NOT NULL DEFAULT '1', 
    dilation_h INTEGER NOT NULL, 
    dilation_w INTEGER NOT NULL, 
    trans_output_pad_d INTEGER NOT NULL DEFAULT '0', 
    trans_output_pad_h INTEGER NOT NULL DEFAULT '0', 
    trans_output_pad_w INTEGER NOT NULL DEFAULT '0', 
    bias INTEGER NOT NULL DEFAULT '0', 
    input_tensor INTEGER NOT NULL, 
    weight_tensor INTEGER NOT NULL, 
    out_layout VARCHAR(16) NOT NULL, 
    out_type VARCHAR(16) NOT NULL, 
    in_cast VARCHAR(8), 
    wei_cast VARCHAR(8), 
    out_cast VARCHAR(8), 
    driver MEDIUMTEXT NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_conv_config PRIMARY KEY (id), 
    CONSTRAINT fk_conv_config_input_tensor_tensor FOREIGN KEY(input_tensor) REFERENCES tensor (id), 
    CONSTRAINT fk_conv_config_weight_tensor_tensor FOREIGN KEY(weight_tensor) REFERENCES tensor (id), 
    CONSTRAINT uq_conv_config_fdb_key UNIQUE (fdb_key)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE config_tag (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    config INTEGER NOT NULL, 
    tag VARCHAR(128) NOT NULL, 
    recurrent BOOL NOT NULL DEFAULT '0', 
    CONSTRAINT pk_config_tag PRIMARY KEY (id), 
    CONSTRAINT fk_config_tag_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id) ON DELETE CASCADE, 
    CONSTRAINT uq_config_tag_config_tag UNIQUE (config, tag)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_config_tag_tag ON config_tag (tag);

CREATE TABLE golden (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    golden_v INTEGER NOT NULL, 
    session INTEGER NOT NULL, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    fdb_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, 
    params TEXT, 
    time_ms DOUBLE NOT NULL, 
    workspace BIGINT NOT NULL, 
    algorithm VARCHAR(64) NOT NULL, 
    CONSTRAINT pk_golden PRIMARY KEY (id), 
    CONSTRAINT fk_golden_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id), 
    CONSTRAINT fk_golden_golden_v_golden_version FOREIGN KEY(golden_v) REFERENCES golden_version (version), 
    CONSTRAINT fk_golden_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT fk_golden_solver_solver FOREIGN KEY(solver) REFERENCES solver (id), 
    CONSTRAINT uq_golden_golden_v_config_solver UNIQUE (golden_v, config, solver)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE job (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    step VARCHAR(20) NOT NULL, 
    state VARCHAR(20) NOT NULL DEFAULT 'new', 
    label VARCHAR(128), 
    priority SMALLINT NOT NULL DEFAULT '0', 
    attempt INTEGER NOT NULL DEFAULT '0', 
    retries INTEGER NOT NULL DEFAULT '0', 
    lease_owner VARCHAR(128), 
    lease_expires DATETIME(6), 
    machine INTEGER, 
    gpu INTEGER, 
    result MEDIUMTEXT, 
    reason MEDIUMTEXT, 
    compile_start DATETIME(6), 
    compile_end DATETIME(6), 
    eval_start DATETIME(6), 
    eval_end DATETIME(6), 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_job PRIMARY KEY (id), 
    CONSTRAINT fk_job_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id), 
    CONSTRAINT fk_job_machine_machine FOREIGN KEY(machine) REFERENCES machine (id), 
    CONSTRAINT fk_job_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT fk_job_solver_solver FOREIGN KEY(solver) REFERENCES solver (id), 
    CONSTRAINT uq_job_session_config_solver_step UNIQUE (session, config, solver, step), 
    CONSTRAINT ck_job_job_step CHECK (step IN ('perf', 'find', 'kernel')), 
    CONSTRAINT ck_job_job_state CHECK (state IN ('new', 'compile_start', 'compiled', 'eval_start', 'evaluated', 'errored', 'not_applicable'))
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_job_claim ON job (session, state, priority, id);

CREATE INDEX ix_job_lease ON job (state, lease_expires);

CREATE TABLE find_db (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    time_ms DOUBLE NOT NULL, 
    workspace BIGINT NOT NULL, 
    algorithm VARCHAR(64) NOT NULL, 
    params TEXT, 
    job BIGINT, 
    kernel BIGINT, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_find_db PRIMARY KEY (id), 
    CONSTRAINT fk_find_db_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id), 
    CONSTRAINT fk_find_db_job_job FOREIGN KEY(job) REFERENCES job (id) ON DELETE SET NULL, 
    CONSTRAINT fk_find_db_kernel_kernel_cache FOREIGN KEY(kernel) REFERENCES kernel_cache (id), 
    CONSTRAINT fk_find_db_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT fk_find_db_solver_solver FOREIGN KEY(solver) REFERENCES solver (id), 
    CONSTRAINT uq_find_db_session_config_solver UNIQUE (session, config, solver)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE job_kernel (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    job BIGINT NOT NULL, 
    kernel BIGINT NOT NULL, 
    CONSTRAINT pk_job_kernel PRIMARY KEY (id), 
    CONSTRAINT fk_job_kernel_job_job FOREIGN KEY(job) REFERENCES job (id) ON DELETE CASCADE, 
    CONSTRAINT fk_job_kernel_kernel_kernel_cache FOREIGN KEY(kernel) REFERENCES kernel_cache (id), 
    CONSTRAINT uq_job_kernel_job_kernel UNIQUE (job, kernel)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_job_kernel_kernel ON job_kernel (kernel);

CREATE TABLE perf_db (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    params TEXT NOT NULL, 
    job BIGINT, 
    kernel BIGINT, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_perf_db PRIMARY KEY (id), 
    CONSTRAINT fk_perf_db_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id), 
    CONSTRAINT fk_perf_db_job_job FOREIGN KEY(job) REFERENCES job (id) ON DELETE SET NULL, 
    CONSTRAINT fk_perf_db_kernel_kernel_cache FOREIGN KEY(kernel) REFERENCES kernel_cache (id), 
    CONSTRAINT fk_perf_db_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT fk_perf_db_solver_solver FOREIGN KEY(solver) REFERENCES solver (id), 
    CONSTRAINT uq_perf_db_session_config_solver UNIQUE (session, config, solver)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

INSERT INTO alembic_version (version_num) VALUES ('0001');

-- Running upgrade 0001 -> 0002

CREATE TABLE solver_applicability (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    applicable BOOL NOT NULL, 
    reason VARCHAR(512), 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_solver_applicability PRIMARY KEY (id), 
    CONSTRAINT fk_solver_applicability_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id) ON DELETE CASCADE, 
    CONSTRAINT fk_solver_applicability_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT fk_solver_applicability_solver_solver FOREIGN KEY(solver) REFERENCES solver (id), 
    CONSTRAINT uq_solver_applicability_session_config_solver UNIQUE (session, config, solver)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

UPDATE alembic_version SET version_num='0002' WHERE alembic_version.version_num = '0001';

-- Running upgrade 0002 -> 0003

ALTER TABLE job_kernel ADD COLUMN chosen BOOL NOT NULL DEFAULT '0';

ALTER TABLE golden ADD COLUMN job BIGINT;

ALTER TABLE golden ADD CONSTRAINT fk_golden_job_job FOREIGN KEY(job) REFERENCES job (id) ON DELETE SET NULL;

CREATE TABLE golden_kernel (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    golden BIGINT NOT NULL, 
    kernel BIGINT NOT NULL, 
    CONSTRAINT pk_golden_kernel PRIMARY KEY (id), 
    CONSTRAINT fk_golden_kernel_golden_golden FOREIGN KEY(golden) REFERENCES golden (id) ON DELETE CASCADE, 
    CONSTRAINT fk_golden_kernel_kernel_kernel_cache FOREIGN KEY(kernel) REFERENCES kernel_cache (id), 
    CONSTRAINT uq_golden_kernel_golden_kernel UNIQUE (golden, kernel)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_golden_kernel_kernel ON golden_kernel (kernel);

UPDATE job_kernel SET chosen = 1 WHERE EXISTS (SELECT 1 FROM find_db f WHERE f.job = job_kernel.job AND f.kernel = job_kernel.kernel) OR EXISTS (SELECT 1 FROM perf_db p WHERE p.job = job_kernel.job AND p.kernel = job_kernel.kernel);

UPDATE golden SET job = (SELECT f.job FROM find_db f WHERE f.session = golden.session AND f.config = golden.config AND f.solver = golden.solver);

INSERT INTO golden_kernel (golden, kernel) SELECT g.id, jk.kernel FROM golden g JOIN job_kernel jk ON jk.job = g.job WHERE jk.chosen = 1 ORDER BY g.id, jk.kernel;

UPDATE alembic_version SET version_num='0003' WHERE alembic_version.version_num = '0002';

-- Running upgrade 0003 -> 0004

CREATE VIEW mituna_session AS
SELECT s.id AS id, s.created AS insert_ts, s.created AS update_ts, 1 AS valid,
       s.arch AS arch, s.num_cu AS num_cu, s.toolchain AS rocm_v,
       s.library_version AS miopen_v, s.label AS reason,
       COALESCE(s.ticket, 'N/A') AS ticket, s.docker_image AS docker,
       s.backend AS backend, s.library_commit AS library_commit
  FROM session s;

CREATE VIEW mituna_solver AS
SELECT s.id AS id, s.valid AS valid, s.name AS solver, s.tunable AS tunable,
       'convolution' AS config_type, 0 AS is_dynamic,
       s.numeric_id AS numeric_id, s.backend AS backend, s.algorithm AS algorithm
  FROM solver s;

CREATE VIEW mituna_conv_config AS
SELECT c.id AS id, c.created AS insert_ts, c.created AS update_ts, 1 AS valid,
       x.dim0 AS batchsize, c.spatial_dim AS spatial_dim,
       c.pad_d AS pad_d, c.pad_h AS pad_h, c.pad_w AS pad_w,
       c.conv_stride_d AS conv_stride_d, c.conv_stride_h AS conv_stride_h,
       c.conv_stride_w AS conv_stride_w,
       c.dilation_d AS dilation_d, c.dilation_h AS dilation_h, c.dilation_w AS dilation_w,
       c.group_count AS group_count, c.mode AS mode, 'default' AS pad_mode,
       c.trans_output_pad_d AS trans_output_pad_d, c.trans_output_pad_h AS trans_output_pad_h,
       c.trans_output_pad_w AS trans_output_pad_w, c.direction AS direction,
       c.input_tensor AS input_tensor, c.weight_tensor AS weight_tensor,
       c.out_layout AS out_layout, c.fdb_key AS md5, c.driver AS driver
  FROM conv_config c JOIN tensor x ON x.id = c.input_tensor;

CREATE VIEW conv_config_tags AS
SELECT t.id AS id, 1 AS valid, t.config AS config, t.tag AS tag, t.recurrent AS recurrent
  FROM config_tag t;

CREATE VIEW bn_config_tags AS
SELECT t.id AS id, 1 AS valid, t.config AS config, t.tag AS tag, t.recurrent AS recurrent
  FROM bn_config_tag t;

CREATE VIEW conv_solver_applicability AS
SELECT a.id AS id, a.created AS insert_ts, a.created AS update_ts, 1 AS valid,
       a.config AS config, a.solver AS solver, a.session AS session,
       a.applicable AS applicable
  FROM solver_applicability a;

CREATE VIEW conv_job AS
SELECT j.id AS id, j.created AS insert_ts,
       COALESCE(j.eval_end, j.eval_start, j.compile_end, j.compile_start, j.created)
         AS update_ts,
       1 AS valid, j.config AS config, j.session AS session, j.label AS reason,
       j.state AS state, j.retries AS retries, j.reason AS result,
       COALESCE(j.gpu, -1) AS gpu_id, COALESCE(j.machine, -1) AS machine_id,
       -1 AS eval_mid, NULL AS cache_loc,
       j.compile_start AS compile_start, j.compile_end AS compile_end,
       j.eval_start AS eval_start, j.eval_end AS eval_end,
       s.name AS solver,
       CASE j.step
         WHEN 'perf' THEN 'miopen_perf_compile,miopen_perf_eval'
         WHEN 'find' THEN 'miopen_find_compile,miopen_find_eval'
         ELSE 'not_fin'
       END AS fin_step
  FROM job j JOIN solver s ON s.id = j.solver;

CREATE VIEW conv_find_db AS
SELECT f.id AS id, f.created AS insert_ts, f.created AS update_ts, 1 AS valid,
       f.config AS config, f.solver AS solver, f.session AS session,
       c.fdb_key AS fdb_key, f.params AS params, f.time_ms AS kernel_time,
       f.workspace AS workspace_sz, f.algorithm AS alg_lib, 0 AS opencl,
       f.id AS kernel_group
  FROM find_db f JOIN conv_config c ON c.id = f.config;

CREATE VIEW conv_kernel_cache AS
SELECT k.id AS id, k.created AS insert_ts, k.created AS update_ts, 1 AS valid,
       f.id AS kernel_group, k.kernel_name AS kernel_name, k.kernel_args AS kernel_args,
       k.blob AS kernel_blob, k.kernel_hash AS kernel_hash,
       k.uncompressed_size AS uncompressed_size
  FROM find_db f
  JOIN job_kernel jk ON jk.job = f.job AND jk.chosen = 1
  JOIN kernel_cache k ON k.id = jk.kernel;

CREATE VIEW conv_golden AS
SELECT g.id AS id, v.created AS insert_ts, v.created AS update_ts, 1 AS valid,
       g.golden_v AS golden_miopen_v, v.arch AS arch, v.num_cu AS num_cu,
       g.session AS session, g.solver AS solver, g.config AS config,
       g.fdb_key AS fdb_key, g.params AS params, g.time_ms AS kernel_time,
       g.workspace AS workspace_sz, g.algorithm AS alg_lib, 0 AS opencl,
       g.id AS kernel_group
  FROM golden g JOIN golden_version v ON v.version = g.golden_v;

UPDATE alembic_version SET version_num='0004' WHERE alembic_version.version_num = '0003';

-- Running upgrade 0004 -> 0005

CREATE INDEX ix_job_session_compile_end ON job (session, compile_end);

CREATE INDEX ix_job_session_eval_end ON job (session, eval_end);

UPDATE alembic_version SET version_num='0005' WHERE alembic_version.version_num = '0004';

-- Running upgrade 0005 -> 0006

ALTER TABLE solver MODIFY name VARCHAR(128) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL;

ALTER TABLE conv_config ADD COLUMN pad_mode VARCHAR(8) NOT NULL DEFAULT 'default';

ALTER TABLE session ADD COLUMN runtime VARCHAR(16);

UPDATE alembic_version SET version_num='0006' WHERE alembic_version.version_num = '0005';

-- Running upgrade 0006 -> 0007

CREATE TABLE platform (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    digest VARCHAR(64) NOT NULL, 
    info JSON NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_platform PRIMARY KEY (id), 
    CONSTRAINT uq_platform_digest UNIQUE (digest)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE measurement (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    job BIGINT, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    params TEXT NOT NULL, 
    platform INTEGER NOT NULL, 
    machine INTEGER, 
    strategy VARCHAR(32), 
    time_ms DOUBLE, 
    valid BOOL NOT NULL, 
    reason VARCHAR(255), 
    taken DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_measurement PRIMARY KEY (id), 
    CONSTRAINT fk_measurement_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT fk_measurement_config_conv_config FOREIGN KEY(config) REFERENCES conv_config (id)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_measurement_session_config_solver ON measurement (session, config, solver);

CREATE INDEX ix_measurement_config_solver_platform ON measurement (config, solver, platform);

ALTER TABLE session ADD COLUMN user_platform JSON;

ALTER TABLE machine ADD COLUMN user_platform JSON;

ALTER TABLE machine ADD COLUMN platform INTEGER;

UPDATE alembic_version SET version_num='0007' WHERE alembic_version.version_num = '0006';

-- Running upgrade 0007 -> 0008

CREATE TABLE search (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    name VARCHAR(128) NOT NULL, 
    space_file VARCHAR(255) NOT NULL, 
    space_text MEDIUMTEXT NOT NULL, 
    base JSON NOT NULL, 
    searcher VARCHAR(255), 
    objective JSON NOT NULL, 
    budget INTEGER, 
    parallelism INTEGER NOT NULL, 
    backend VARCHAR(32) NOT NULL, 
    spec JSON NOT NULL, 
    state VARCHAR(16) NOT NULL DEFAULT 'active', 
    reason MEDIUMTEXT, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    finished DATETIME(6), 
    CONSTRAINT pk_search PRIMARY KEY (id), 
    CONSTRAINT fk_search_session_session FOREIGN KEY(session) REFERENCES session (id), 
    CONSTRAINT uq_search_session_name UNIQUE (session, name)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE artifact (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    digest VARCHAR(64) NOT NULL, 
    size BIGINT NOT NULL, 
    `blob` LONGBLOB NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_artifact PRIMARY KEY (id), 
    CONSTRAINT uq_artifact_digest UNIQUE (digest)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE search_build (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    search INTEGER NOT NULL, 
    build_key VARCHAR(64) NOT NULL, 
    params JSON NOT NULL, 
    artifact BIGINT, 
    valid BOOL, 
    reason MEDIUMTEXT, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    finished DATETIME(6), 
    CONSTRAINT pk_search_build PRIMARY KEY (id), 
    CONSTRAINT fk_search_build_artifact_artifact FOREIGN KEY(artifact) REFERENCES artifact (id), 
    CONSTRAINT fk_search_build_search_search FOREIGN KEY(search) REFERENCES search (id), 
    CONSTRAINT uq_search_build_search_build_key UNIQUE (search, build_key)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE TABLE search_run (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    search INTEGER NOT NULL, 
    seq INTEGER NOT NULL, 
    point JSON NOT NULL, 
    config JSON NOT NULL, 
    build BIGINT, 
    stats JSON, 
    value DOUBLE, 
    valid BOOL, 
    reason MEDIUMTEXT, 
    machine INTEGER, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    finished DATETIME(6), 
    CONSTRAINT pk_search_run PRIMARY KEY (id), 
    CONSTRAINT fk_search_run_build_search_build FOREIGN KEY(build) REFERENCES search_build (id), 
    CONSTRAINT fk_search_run_machine_machine FOREIGN KEY(machine) REFERENCES machine (id), 
    CONSTRAINT fk_search_run_search_search FOREIGN KEY(search) REFERENCES search (id), 
    CONSTRAINT uq_search_run_search_seq UNIQUE (search, seq)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

CREATE INDEX ix_search_run_build ON search_run (build);

ALTER TABLE job MODIFY config INTEGER NULL;

ALTER TABLE job MODIFY solver INTEGER NULL;

ALTER TABLE job DROP CONSTRAINT ck_job_job_step;

ALTER TABLE job ADD CONSTRAINT ck_job_job_step CHECK (step IN ('perf', 'find', 'kernel', 'build', 'run'));

ALTER TABLE job ADD COLUMN search_build BIGINT;

ALTER TABLE job ADD COLUMN search_run BIGINT;

ALTER TABLE job ADD CONSTRAINT fk_job_search_build_search_build FOREIGN KEY(search_build) REFERENCES search_build (id);

ALTER TABLE job ADD CONSTRAINT fk_job_search_run_search_run FOREIGN KEY(search_run) REFERENCES search_run (id);

CREATE UNIQUE INDEX ix_job_search_build ON job (search_build);

CREATE UNIQUE INDEX ix_job_search_run ON job (search_run);

UPDATE alembic_version SET version_num='0008' WHERE alembic_version.version_num = '0007';

-- Running upgrade 0008 -> 0009

ALTER TABLE session ADD COLUMN history_rules JSON;

ALTER TABLE session ADD COLUMN retired DATETIME(6);

ALTER TABLE session ADD COLUMN retired_reason VARCHAR(255);

UPDATE alembic_version SET version_num='0009' WHERE alembic_version.version_num = '0008';

-- Running upgrade 0009 -> 0010

CREATE INDEX ix_measurement_session_config_solver_platform_taken ON measurement (session, config, solver, platform, taken);

DROP INDEX ix_measurement_session_config_solver ON measurement;

UPDATE alembic_version SET version_num='0010' WHERE alembic_version.version_num = '0009';

-- Running upgrade 0010 -> 0011

CREATE INDEX ix_search_run_search_valid_seq ON search_run (search, valid, seq);

CREATE INDEX ix_search_run_search_valid_value_finished_seq ON search_run (search, valid, value, finished, seq);

UPDATE alembic_version SET version_num='0011' WHERE alembic_version.version_num = '0010';

-- Running upgrade 0011 -> 0012

CREATE INDEX ix_search_run_search_finished_seq_valid_value ON search_run (search, finished, seq, valid, value);

UPDATE alembic_version SET version_num='0012' WHERE alembic_version.version_num = '0011';

-- Running upgrade 0012 -> 0013

CREATE TABLE search_tally (
    search INTEGER NOT NULL, 
    runs BIGINT NOT NULL, 
    done BIGINT NOT NULL, 
    valid BIGINT NOT NULL, 
    CONSTRAINT pk_search_tally PRIMARY KEY (search), 
    CONSTRAINT fk_search_tally_search_search FOREIGN KEY(search) REFERENCES search (id)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

INSERT INTO search_tally (search, runs, done, valid) SELECT s.id, COUNT(r.id), COUNT(r.valid), COALESCE(SUM(CASE WHEN r.valid = 1 THEN 1 ELSE 0 END), 0) FROM search s LEFT JOIN search_run r ON r.search = s.id GROUP BY s.id;

UPDATE alembic_version SET version_num='0013' WHERE alembic_version.version_num = '0012';

-- Running upgrade 0013 -> 0014

CREATE TABLE measurement_effort (
    session INTEGER NOT NULL, 
    config INTEGER NOT NULL, 
    solver INTEGER NOT NULL, 
    platform INTEGER NOT NULL, 
    day DATE NOT NULL, 
    strategy VARCHAR(32) NOT NULL DEFAULT '', 
    measurements INTEGER NOT NULL, 
    valid INTEGER NOT NULL, 
    CONSTRAINT pk_measurement_effort PRIMARY KEY (session, config, solver, platform, day, strategy), 
    CONSTRAINT fk_measurement_effort_session_session FOREIGN KEY(session) REFERENCES session (id)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

INSERT INTO measurement_effort
    (session, config, solver, platform, day, strategy, measurements, valid)
SELECT session, config, solver, platform, DATE(taken), COALESCE(strategy, ''), COUNT(*),
       SUM(CASE WHEN valid THEN 1 ELSE 0 END)
FROM measurement
GROUP BY session, config, solver, platform, DATE(taken), COALESCE(strategy, '');

UPDATE alembic_version SET version_num='0014' WHERE alembic_version.version_num = '0013';

-- Running upgrade 0014 -> 0015

ALTER TABLE measurement_effort ADD COLUMN budget INTEGER;

UPDATE alembic_version SET version_num='0015' WHERE alembic_version.version_num = '0014';

-- Running upgrade 0015 -> 0016

CREATE INDEX ix_search_run_build_valid ON search_run (build, valid);

DROP INDEX ix_search_run_build ON search_run;

UPDATE alembic_version SET version_num='0016' WHERE alembic_version.version_num = '0015';

-- Running upgrade 0016 -> 0017

ALTER TABLE measurement ADD INDEX ix_measurement_session_config_solver_platform (session, config, solver, platform), DROP FOREIGN KEY fk_measurement_config_conv_config, DROP INDEX ix_measurement_session_config_solver_platform_taken, DROP INDEX ix_measurement_config_solver_platform;

UPDATE alembic_version SET version_num='0017' WHERE alembic_version.version_num = '0016';

-- Running upgrade 0017 -> 0018

ALTER TABLE session ADD COLUMN default_strategy JSON;

UPDATE alembic_version SET version_num='0018' WHERE alembic_version.version_num = '0017';

-- Running upgrade 0018 -> 0019

ALTER TABLE search_run ADD COLUMN landed INTEGER;

UPDATE search_run r JOIN (SELECT id, ROW_NUMBER() OVER (PARTITION BY search ORDER BY finished, seq) AS n FROM search_run WHERE valid IS NOT NULL) AS x ON r.id = x.id SET r.landed = x.n;

CREATE INDEX ix_search_run_search_valid_value_landed ON search_run (search, valid, value, landed);

CREATE INDEX ix_search_run_search_landed_valid_value ON search_run (search, landed, valid, value);

DROP INDEX ix_search_run_search_valid_value_finished_seq ON search_run;

DROP INDEX ix_search_run_search_finished_seq_valid_value ON search_run;

UPDATE alembic_version SET version_num='0019' WHERE alembic_version.version_num = '0018';

-- Running upgrade 0019 -> 0020

ALTER TABLE find_db ADD COLUMN import_order INTEGER;

CREATE TABLE key_only_record (
    id INTEGER NOT NULL AUTO_INCREMENT, 
    session INTEGER NOT NULL, 
    fdb_key VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL, 
    entries MEDIUMTEXT NOT NULL, 
    reason TEXT NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_key_only_record PRIMARY KEY (id), 
    CONSTRAINT fk_key_only_record_session_session FOREIGN KEY(session) REFERENCES session (id) ON DELETE CASCADE, 
    CONSTRAINT uq_key_only_record_session_fdb_key UNIQUE (session, fdb_key)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

DROP VIEW IF EXISTS conv_find_db;

CREATE VIEW conv_find_db AS
SELECT f.id AS id, f.created AS insert_ts, f.created AS update_ts, 1 AS valid,
       f.config AS config, f.solver AS solver, f.session AS session,
       c.fdb_key AS fdb_key, f.params AS params, f.time_ms AS kernel_time,
       f.workspace AS workspace_sz, f.algorithm AS alg_lib, CASE WHEN s.runtime = 'OpenCL' THEN 1 ELSE 0 END AS opencl,
       f.id AS kernel_group
  FROM find_db f JOIN conv_config c ON c.id = f.config
  JOIN session s ON s.id = f.session;

DROP VIEW IF EXISTS conv_golden;

CREATE VIEW conv_golden AS
SELECT g.id AS id, v.created AS insert_ts, v.created AS update_ts, 1 AS valid,
       g.golden_v AS golden_miopen_v, v.arch AS arch, v.num_cu AS num_cu,
       g.session AS session, g.solver AS solver, g.config AS config,
       g.fdb_key AS fdb_key, g.params AS params, g.time_ms AS kernel_time,
       g.workspace AS workspace_sz, g.algorithm AS alg_lib, CASE WHEN s.runtime = 'OpenCL' THEN 1 ELSE 0 END AS opencl,
       g.id AS kernel_group
  FROM golden g JOIN golden_version v ON v.version = g.golden_v
  JOIN session s ON s.id = g.session;

UPDATE alembic_version SET version_num='0020' WHERE alembic_version.version_num = '0019';

-- Running upgrade 0020 -> 0021

ALTER TABLE job ADD COLUMN leases_lost INTEGER NOT NULL DEFAULT '0';

ALTER TABLE job ADD COLUMN tries_failed INTEGER NOT NULL DEFAULT '0';

UPDATE alembic_version SET version_num='0021' WHERE alembic_version.version_num = '0020';

-- Running upgrade 0021 -> 0022

CREATE INDEX ix_job_failure ON job (session, state, reason(255));

UPDATE alembic_version SET version_num='0022' WHERE alembic_version.version_num = '0021';

-- Running upgrade 0022 -> 0023

ALTER TABLE search ADD COLUMN pruner JSON;

ALTER TABLE search ADD COLUMN time_budget_s DOUBLE;

ALTER TABLE search_run ADD COLUMN intermediate JSON;

ALTER TABLE search_run ADD COLUMN pruned BOOL NOT NULL DEFAULT '0';

UPDATE alembic_version SET version_num='0023' WHERE alembic_version.version_num = '0022';

-- Running upgrade 0023 -> 0024

CREATE TABLE search_validation (
    id BIGINT NOT NULL AUTO_INCREMENT, 
    search INTEGER NOT NULL, 
    seq INTEGER NOT NULL, 
    inputs VARCHAR(64) NOT NULL, 
    config JSON NOT NULL, 
    predicted JSON, 
    stats JSON, 
    reason MEDIUMTEXT, 
    kept BOOL NOT NULL, 
    created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP, 
    CONSTRAINT pk_search_validation PRIMARY KEY (id), 
    CONSTRAINT fk_search_validation_search_search FOREIGN KEY(search) REFERENCES search (id), 
    CONSTRAINT uq_search_validation_search_inputs_seq UNIQUE (search, inputs, seq)
)ENGINE=InnoDB CHARSET=utf8mb4 COLLATE utf8mb4_unicode_ci;

UPDATE alembic_version SET version_num='0024' WHERE alembic_version.version_num = '0023';

-- Running upgrade 0024 -> 0025

ALTER TABLE search_tally ADD COLUMN pruned BIGINT NOT NULL DEFAULT '0';

UPDATE search_tally SET pruned = (SELECT COUNT(*) FROM search_run WHERE search_run.search = search_tally.search AND search_run.pruned = 1);

UPDATE alembic_version SET version_num='0025' WHERE alembic_version.version_num = '0024';

-- Running upgrade 0025 -> 0026

ALTER TABLE search_run ADD COLUMN lease_expires DATETIME(6);

UPDATE alembic_version SET version_num='0026' WHERE alembic_version.version_num = '0025';

-- Running upgrade 0026 -> 0027

UPDATE search_run SET intermediate = NULL WHERE JSON_TYPE(intermediate) = 'NULL';

UPDATE alembic_version SET version_num='0027' WHERE alembic_version.version_num = '0026';

