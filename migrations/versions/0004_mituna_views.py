"""MITuna compatibility views: MITuna's table and column names over Tuna's tables

Read-only views so that MITuna's queries (Jenkins pipelines, scripts, habits) run against a
Tuna database and return what they mean there. The trap they close: MITuna's
``conv_job.reason`` is the job's *label*, Tuna's ``job.reason`` is the failure text, so a
query merely renamed to Tuna's tables silently counts nothing.

Where Tuna already has a table under MITuna's name (``session``, ``conv_config``,
``solver``), Tuna's table keeps it and the view with MITuna's columns is ``mituna_<name>``;
a MITuna query that reads a column Tuna's table lacks (``session.reason``,
``conv_config.valid``, ``solver.solver``) then fails loudly instead of answering wrongly.

Every view has ``valid`` = 1 (Tuna deletes nothing softly). Solver ids are Tuna's
(``solver.id``; MIOpen's numeric id is ``mituna_solver.numeric_id``). ``conv_job.result``
is Tuna's ``job.reason`` (why a job failed or does not apply; Tuna's ``job.result`` is the
compile phase's payload for the evaluate phase and is not shown).

The views are plain ``CREATE VIEW`` statements that MariaDB and SQLite both read, and
alembic's model comparison does not see them. A later migration that drops or renames a
column a view reads must drop the views first and create them again after (with its own
frozen copy of the definitions, as this one freezes these).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# name -> SELECT; created in this order, dropped in the reverse.
VIEWS: dict[str, str] = {
    "mituna_session": """
SELECT s.id AS id, s.created AS insert_ts, s.created AS update_ts, 1 AS valid,
       s.arch AS arch, s.num_cu AS num_cu, s.toolchain AS rocm_v,
       s.library_version AS miopen_v, s.label AS reason,
       COALESCE(s.ticket, 'N/A') AS ticket, s.docker_image AS docker,
       s.backend AS backend, s.library_commit AS library_commit
  FROM session s""",
    "mituna_solver": """
SELECT s.id AS id, s.valid AS valid, s.name AS solver, s.tunable AS tunable,
       'convolution' AS config_type, 0 AS is_dynamic,
       s.numeric_id AS numeric_id, s.backend AS backend, s.algorithm AS algorithm
  FROM solver s""",
    "mituna_conv_config": """
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
  FROM conv_config c JOIN tensor x ON x.id = c.input_tensor""",
    "conv_config_tags": """
SELECT t.id AS id, 1 AS valid, t.config AS config, t.tag AS tag, t.recurrent AS recurrent
  FROM config_tag t""",
    "bn_config_tags": """
SELECT t.id AS id, 1 AS valid, t.config AS config, t.tag AS tag, t.recurrent AS recurrent
  FROM bn_config_tag t""",
    "conv_solver_applicability": """
SELECT a.id AS id, a.created AS insert_ts, a.created AS update_ts, 1 AS valid,
       a.config AS config, a.solver AS solver, a.session AS session,
       a.applicable AS applicable
  FROM solver_applicability a""",
    "conv_job": """
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
  FROM job j JOIN solver s ON s.id = j.solver""",
    "conv_find_db": """
SELECT f.id AS id, f.created AS insert_ts, f.created AS update_ts, 1 AS valid,
       f.config AS config, f.solver AS solver, f.session AS session,
       c.fdb_key AS fdb_key, f.params AS params, f.time_ms AS kernel_time,
       f.workspace AS workspace_sz, f.algorithm AS alg_lib, 0 AS opencl,
       f.id AS kernel_group
  FROM find_db f JOIN conv_config c ON c.id = f.config""",
    "conv_kernel_cache": """
SELECT k.id AS id, k.created AS insert_ts, k.created AS update_ts, 1 AS valid,
       f.id AS kernel_group, k.kernel_name AS kernel_name, k.kernel_args AS kernel_args,
       k.blob AS kernel_blob, k.kernel_hash AS kernel_hash,
       k.uncompressed_size AS uncompressed_size
  FROM find_db f
  JOIN job_kernel jk ON jk.job = f.job AND jk.chosen = 1
  JOIN kernel_cache k ON k.id = jk.kernel""",
    "conv_golden": """
SELECT g.id AS id, v.created AS insert_ts, v.created AS update_ts, 1 AS valid,
       g.golden_v AS golden_miopen_v, v.arch AS arch, v.num_cu AS num_cu,
       g.session AS session, g.solver AS solver, g.config AS config,
       g.fdb_key AS fdb_key, g.params AS params, g.time_ms AS kernel_time,
       g.workspace AS workspace_sz, g.algorithm AS alg_lib, 0 AS opencl,
       g.id AS kernel_group
  FROM golden g JOIN golden_version v ON v.version = g.golden_v""",
}


def create_views() -> None:
    for name, select in VIEWS.items():
        op.execute(f"CREATE VIEW {name} AS{select}")


def drop_views() -> None:
    for name in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {name}")


def upgrade() -> None:
    create_views()


def downgrade() -> None:
    drop_views()
