/* Exercises every function of the C ABI v1 through include/cmsc.h, as a C caller would.
 * Built with: gcc -std=c99 -Wall -Werror -Iinclude tests/c/smoke.c -lcmsc -lm  (see Makefile). */
#include "cmsc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int passed = 0, failed = 0;

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (cond) {                                                                   \
            passed++;                                                                 \
        } else {                                                                      \
            failed++;                                                                 \
            fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__,    \
                    __LINE__, #cond, cmsc_last_error());                              \
        }                                                                             \
    } while (0)

#define OK(call) CHECK((call) == CMSC_OK)

int main(void) {
    CmscParams p;
    cmsc_params_default(&p);
    CHECK(p.time_step > 0.0 && p.iterations >= 1);
    CHECK(p.coulomb == CMSC_COULOMB_AUTO && p.integrator == CMSC_INTEGRATOR_IMEX);
    CHECK(isinf(p.ground_height) && p.ground_height < 0.0);
    CHECK(strcmp(cmsc_version(), CMSC_VERSION_STRING) == 0);
    CHECK(CMSC_ABI_VERSION == 1 && cmsc_abi_version() == CMSC_ABI_VERSION);

    /* Two charges 0.5 m apart, no springs: Coulomb's law through the ABI. */
    {
        const double x[6] = {0, 0, 0, 0.3, 0.4, 0};
        const double m[2] = {1, 1};
        const double q[2] = {3e-6, -5e-6};
        CmscSim *two = NULL;
        p.gravity[2] = 0.0;
        p.coulomb = CMSC_COULOMB_DIRECT;
        OK(cmsc_create(x, 2, m, NULL, 0, NULL, &p, &two));
        OK(cmsc_set_charges(two, q, 2));
        double f[6];
        OK(cmsc_coulomb_forces(two, f, 2));
        const double expected = p.coulomb_constant * 3e-6 * 5e-6 / 0.25;
        const double mag = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
        CHECK(fabs(mag / expected - 1.0) < 1e-5);   /* automatic softening: ~1e-6 */
        CHECK(f[0] > 0 && f[1] > 0);                /* vertex 0 is pulled toward vertex 1 */
        CHECK(fabs(f[0] + f[3]) < 1e-12 * expected); /* Newton's third law */
        cmsc_destroy(two);
    }

    /* DDEF against the direct sum on a charged ring of 400 vertices. */
    {
        enum { N = 400 };
        static double x[3 * N], m[N], q[N], fd[3 * N], fa[3 * N];
        for (int i = 0; i < N; i++) {
            const double t = 6.283185307179586 * i / N;
            x[3 * i] = cos(t);
            x[3 * i + 1] = sin(t);
            x[3 * i + 2] = 0.1 * sin(5 * t);
            m[i] = 1.0;
            q[i] = (i % 3 == 0) ? -1e-6 : 2e-6;
        }
        CmscSim *direct = NULL, *ddef = NULL;
        p.coulomb = CMSC_COULOMB_DIRECT;
        OK(cmsc_create(x, N, m, NULL, 0, NULL, &p, &direct));
        p.coulomb = CMSC_COULOMB_DDEF;
        p.grid_points = 200;
        OK(cmsc_create(x, N, m, NULL, 0, NULL, &p, &ddef));
        OK(cmsc_set_charges(direct, q, N));
        OK(cmsc_set_charges(ddef, q, N));
        OK(cmsc_coulomb_forces(direct, fd, N));
        OK(cmsc_coulomb_forces(ddef, fa, N));
        double num = 0, den = 0;
        for (int k = 0; k < 3 * N; k++) {
            num += (fa[k] - fd[k]) * (fa[k] - fd[k]);
            den += fd[k] * fd[k];
        }
        CHECK(sqrt(num / den) < 0.05);
        uint32_t method = 99;
        OK(cmsc_get_coulomb_method(ddef, &method));
        CHECK(method == CMSC_COULOMB_DDEF);
        /* P3M on the same ring: below its default 1e-2 */
        CmscSim *p3m = NULL;
        p.coulomb = CMSC_COULOMB_P3M;
        OK(cmsc_create(x, N, m, NULL, 0, NULL, &p, &p3m));
        OK(cmsc_set_charges(p3m, q, N));
        OK(cmsc_coulomb_forces(p3m, fa, N));
        num = 0;
        for (int k = 0; k < 3 * N; k++) {
            num += (fa[k] - fd[k]) * (fa[k] - fd[k]);
        }
        CHECK(sqrt(num / den) < 0.01);
        OK(cmsc_get_coulomb_method(p3m, &method));
        CHECK(method == CMSC_COULOMB_P3M);
        cmsc_destroy(p3m);
        cmsc_destroy(direct);
        cmsc_destroy(ddef);
    }

    /* A charged tetrahedron with springs. */
    const double x0[12] = {0, 0, 0, 0.1, 0, 0, 0, 0.1, 0, 0, 0, 0.1};
    const double masses[4] = {0.01, 0.01, 0.01, 0.01};
    const uint32_t springs[12] = {0, 1, 0, 2, 0, 3, 1, 2, 1, 3, 2, 3};
    const double k[6] = {50, 50, 50, 50, 50, 50};
    cmsc_params_default(&p);
    p.ground_height = -10.0;
    p.friction = 0.5;
    CmscSim *sim = NULL;
    OK(cmsc_create(x0, 4, masses, springs, 6, k, &p, &sim));
    CHECK(sim != NULL);
    uint32_t resolved = 99;
    OK(cmsc_get_coulomb_method(sim, &resolved));
    CHECK(resolved == CMSC_COULOMB_DIRECT); /* AUTO below CMSC_AUTO_P3M_MIN_VERTICES */
    CHECK(cmsc_get_coulomb_method(sim, NULL) == CMSC_INVALID_ARGUMENT);

    const double q[4] = {1e-7, 1e-7, 1e-7, 1e-7};
    OK(cmsc_set_charges(sim, q, 4));
    CmscEnergies e0, e1;
    OK(cmsc_energies(sim, &e0));
    CHECK(e0.coulomb > 0.0 && e0.spring == 0.0 && e0.kinetic == 0.0);
    CHECK(fabs(e0.total - (e0.kinetic + e0.spring + e0.coulomb + e0.external)) < 1e-12);

    OK(cmsc_step(sim, 60)); /* half a second: it falls and expands */
    double x[12], v[12];
    OK(cmsc_get_positions(sim, x, 4));
    OK(cmsc_get_velocities(sim, v, 4));
    CHECK(x[2] < 0.0 && v[2] < 0.0); /* falling under gravity */
    OK(cmsc_energies(sim, &e1));
    CHECK(e1.kinetic > 0.0);

    /* Pins: vertex 0 held, then moved to a target, reached exactly. */
    const uint32_t pins[1] = {0};
    OK(cmsc_set_pins(sim, pins, 1));
    OK(cmsc_get_positions(sim, x, 4));
    const double held[3] = {x[0], x[1], x[2]};
    OK(cmsc_step(sim, 10));
    OK(cmsc_get_positions(sim, x, 4));
    CHECK(x[0] == held[0] && x[1] == held[1] && x[2] == held[2]);
    const double target[3] = {held[0] + 0.01, held[1], held[2]};
    OK(cmsc_set_pin_targets(sim, target, 1));
    OK(cmsc_step(sim, 1));
    OK(cmsc_get_positions(sim, x, 4));
    CHECK(x[0] == target[0] && x[1] == target[1] && x[2] == target[2]);

    /* External charge, uniform field, a sphere collider: all accepted and stepping works. */
    const double ext_pos[3] = {0.5, 0.5, 0.5}, ext_q[1] = {-1e-6};
    OK(cmsc_set_external_charges(sim, ext_pos, ext_q, 1));
    const double field[3] = {0, 1000, 0};
    OK(cmsc_set_uniform_field(sim, field));
    const double centre[3] = {0, 0, -5}, radius[1] = {1};
    OK(cmsc_set_sphere_colliders(sim, centre, radius, 1));
    OK(cmsc_step(sim, 10));

    /* set_positions / set_velocities round-trip. */
    OK(cmsc_set_positions(sim, x0, 4));
    const double zero[12] = {0};
    OK(cmsc_set_velocities(sim, zero, 4));
    OK(cmsc_get_positions(sim, x, 4));
    OK(cmsc_get_velocities(sim, v, 4));
    CHECK(memcmp(x, x0, sizeof x) == 0 && v[5] == 0.0);

    /* Gradients (appended to v1): one charge group holding every vertex. The target is where
       a known charge ends after 10 steps (rollouts run the steps cmsc_step runs); the fit
       recovers that charge from half of it. */
    {
        const double w[4] = {1, 1, 1, 1}, q_true[4] = {2e-7, 2e-7, 2e-7, 2e-7};
        double target[12], loss = -1.0, grad = 0.0, grad_scale = 0.0, q = 1e-7;
        OK(cmsc_set_charges(sim, q_true, 4));
        OK(cmsc_step(sim, 10));
        OK(cmsc_get_positions(sim, target, 4));
        OK(cmsc_set_positions(sim, x0, 4));
        OK(cmsc_set_velocities(sim, zero, 4));
        OK(cmsc_rollout_gradient(sim, 10, w, 1, &q, target, &loss, &grad, &grad_scale));
        CHECK(loss > 0.0 && grad < 0.0 && isfinite(grad_scale)); /* more charge: closer */
        OK(cmsc_get_positions(sim, x, 4));
        CHECK(memcmp(x, x0, sizeof x) == 0); /* the rollout restored the state */
        OK(cmsc_fit_charges(sim, 10, w, 1, &q, target, 50, &loss));
        CHECK(fabs(q / 2e-7 - 1.0) < 1e-4 && loss < 1e-16);
        CHECK(cmsc_rollout_gradient(sim, 10, w, 1, &q, target, NULL, &grad, NULL) == CMSC_INVALID_ARGUMENT);
        CHECK(strstr(cmsc_last_error(), "out_loss") != NULL);
    }

    /* Mesh colliders (appended to v1): two vertices dropped from 0.5 m onto a 2 m square at
       z = 0 with a contact distance of 2 cm stay above it at every step and come to rest on it;
       lifting the square by 1 cm carries them up. */
    {
        const double drop[6] = {0, 0, 0.5, 0.5, 0, 0.5}, drop_m[2] = {0.01, 0.01};
        double square[12] = {-1, -1, 0, 1, -1, 0, 1, 1, 0, -1, 1, 0}, y[6];
        const uint32_t tris[6] = {0, 1, 2, 0, 2, 3}, first[2] = {0, 2};
        const double thickness = 0.02, friction = 0.5;
        CmscParams pd;
        cmsc_params_default(&pd);
        pd.coulomb = CMSC_COULOMB_OFF;
        CmscSim *d = NULL;
        OK(cmsc_create(drop, 2, drop_m, NULL, 0, NULL, &pd, &d));
        OK(cmsc_set_mesh_colliders(d, square, 4, tris, 2, first, &thickness, &friction, 1));
        double lowest = 1.0;
        for (int s = 0; s < 120; s++) {
            OK(cmsc_step(d, 1));
            OK(cmsc_get_positions(d, y, 2));
            lowest = fmin(lowest, fmin(y[2], y[5]));
        }
        CHECK(lowest >= thickness - 1e-9);
        CHECK(fabs(y[2] - thickness) < 1e-6 && fabs(y[5] - thickness) < 1e-6);
        for (int i = 2; i < 12; i += 3) square[i] = 0.01;
        OK(cmsc_move_mesh_colliders(d, square, 4));
        OK(cmsc_step(d, 1));
        OK(cmsc_get_positions(d, y, 2));
        CHECK(y[2] >= 0.01 + thickness - 1e-9);
        const double bad_friction = 2.0;
        CHECK(cmsc_set_mesh_colliders(d, square, 4, tris, 2, first, &thickness, &bad_friction, 1) ==
              CMSC_INVALID_ARGUMENT);
        CHECK(strstr(cmsc_last_error(), "friction") != NULL);
        cmsc_destroy(d);
        /* self-collision on the square of this test, then off */
        const uint32_t own[6] = {0, 1, 2, 0, 2, 3};
        const double dist[4] = {0.01, 0.01, 0.01, 0.01};
        OK(cmsc_set_self_collision(sim, own, 2, dist, 4));
        OK(cmsc_step(sim, 5));
        OK(cmsc_set_self_collision(sim, NULL, 0, NULL, 0));
    }

    /* Accelerated (1, the default) and plain (0) local/global iterations both step; the two
       agree closely (same fixed point); other values and a NULL handle are rejected. */
    {
        CmscParams pa;
        cmsc_params_default(&pa);
        pa.iterations = 50;
        CmscSim *acc = NULL, *plain = NULL;
        OK(cmsc_create(x0, 4, masses, springs, 6, k, &pa, &acc));
        OK(cmsc_create(x0, 4, masses, springs, 6, k, &pa, &plain));
        OK(cmsc_set_acceleration(acc, 1));
        OK(cmsc_set_acceleration(plain, 0));
        OK(cmsc_set_charges(acc, q, 4));
        OK(cmsc_set_charges(plain, q, 4));
        OK(cmsc_step(acc, 10));
        OK(cmsc_step(plain, 10));
        double xa[12], xp[12], gap = 0.0;
        OK(cmsc_get_positions(acc, xa, 4));
        OK(cmsc_get_positions(plain, xp, 4));
        for (int i = 0; i < 12; i++) {
            CHECK(isfinite(xa[i]));
            gap = fmax(gap, fabs(xa[i] - xp[i]));
        }
        CHECK(gap < 1e-6);
        CHECK(cmsc_set_acceleration(acc, 2) == CMSC_INVALID_ARGUMENT);
        CHECK(strstr(cmsc_last_error(), "enabled") != NULL);
        CHECK(cmsc_set_acceleration(NULL, 1) == CMSC_INVALID_ARGUMENT);
        OK(cmsc_step(acc, 1)); /* still usable after the rejected call */
        cmsc_destroy(acc);
        cmsc_destroy(plain);
    }

    /* Multiple time stepping of DDEF's far field (appended): 4 steps held, then 1 again; 0 and
       values above 1000 are rejected, and so is a NULL handle. */
    {
        CmscParams fp;
        cmsc_params_default(&fp);
        fp.coulomb = CMSC_COULOMB_DDEF;
        CmscSim *f = NULL;
        OK(cmsc_create(x0, 4, masses, springs, 6, k, &fp, &f));
        OK(cmsc_set_charges(f, q, 4));
        OK(cmsc_set_far_field_interval(f, 4));
        OK(cmsc_step(f, 9));
        double xf[12];
        OK(cmsc_get_positions(f, xf, 4));
        for (int i = 0; i < 12; i++) CHECK(isfinite(xf[i]));
        OK(cmsc_set_far_field_interval(f, 1));
        OK(cmsc_step(f, 2));
        CHECK(cmsc_set_far_field_interval(f, 0) == CMSC_INVALID_ARGUMENT);
        CHECK(strstr(cmsc_last_error(), "far_field_interval") != NULL);
        CHECK(cmsc_set_far_field_interval(f, 1001) == CMSC_INVALID_ARGUMENT);
        CHECK(cmsc_set_far_field_interval(NULL, 2) == CMSC_INVALID_ARGUMENT);
        OK(cmsc_step(f, 1)); /* still usable after the rejected calls */
        cmsc_destroy(f);
    }

    /* The low-dissipation IMEX integrator (appended): the same tetrahedron, without gravity,
     * keeps its energy (no more than the safeguard's 0.5 % band above it) and its momentum. */
    {
        CmscParams lp;
        cmsc_params_default(&lp);
        lp.gravity[2] = 0.0;
        lp.integrator = CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION;
        CHECK(CMSC_INTEGRATOR_IMEX_LOW_DISSIPATION == 2);
        CmscSim *low = NULL;
        OK(cmsc_create(x0, 4, masses, springs, 6, k, &lp, &low));
        OK(cmsc_set_charges(low, q, 4));
        CmscEnergies a, b;
        OK(cmsc_energies(low, &a));
        OK(cmsc_step(low, 120));
        OK(cmsc_energies(low, &b));
        CHECK(b.kinetic > 0.0 && b.total <= a.total * 1.01);
        double lv[12];
        OK(cmsc_get_velocities(low, lv, 4));
        for (int c = 0; c < 3; c++) {
            CHECK(fabs(lv[c] + lv[3 + c] + lv[6 + c] + lv[9 + c]) < 1e-9); /* equal masses, from rest */
        }
        lp.integrator = 3; /* not a CmscIntegrator */
        CmscSim *bad = NULL;
        CHECK(cmsc_create(x0, 4, masses, springs, 6, k, &lp, &bad) == CMSC_INVALID_ARGUMENT && bad == NULL);
        CHECK(strstr(cmsc_last_error(), "integrator") != NULL);
        cmsc_destroy(low);
    }

    /* Bad input: a clear status and message, nothing changed. */
    const double nan_q[4] = {1e-7, NAN, 0, 0};
    CHECK(cmsc_set_charges(sim, nan_q, 4) == CMSC_INVALID_ARGUMENT);
    CHECK(strstr(cmsc_last_error(), "charges") != NULL);
    CHECK(cmsc_get_positions(sim, x, 3) == CMSC_INVALID_ARGUMENT);
    CHECK(cmsc_step(NULL, 1) == CMSC_INVALID_ARGUMENT);
    OK(cmsc_step(sim, 0));
    CHECK(strcmp(cmsc_last_error(), "") == 0);
    p.coulomb = CMSC_COULOMB_DIRECT_GPU;
    CmscSim *gpu = NULL;
    CmscStatus gpu_status = cmsc_create(x0, 4, masses, springs, 6, k, &p, &gpu);
    if (gpu_status == CMSC_OK) { /* a CUDA device is present */
        cmsc_destroy(gpu);
    } else { /* no driver or no device: said so, nothing created */
        CHECK(gpu_status == CMSC_UNAVAILABLE && gpu == NULL && strstr(cmsc_last_error(), "CUDA") != NULL);
    }

    cmsc_destroy(sim);
    cmsc_destroy(NULL);

    printf("smoke: %d passed, %d failed\n", passed, failed);
    if (failed == 0) {
        printf("PASS\n");
    }
    return failed == 0 ? 0 : 1;
}
